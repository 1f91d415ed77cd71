"""Object stores named by URI: ``s3://``, ``gs://``, ``az://`` (and ``abfs://``) with
``storage_options``, the convention of Polars, deltalake and obstore.

:class:`ObjectStore` is the :class:`~arrowidx.storage.Store` of one bucket (or Azure
container). Its requests go through `obstore <https://developmentseed.org/obstore/>`_
(Rust's ``object_store``, the client delta-rs commits with): ranged reads coalesced into
few requests, listings that carry ETags, and ``put(..., mode="create")``, the put-if-absent
(S3 ``If-None-Match: *``, GCS ``ifGenerationMatch=0``, Azure ``If-None-Match: *``) that
commits a manifest version. Data files are read by pyarrow through :attr:`ObjectStore.fs`,
pyarrow's own ``S3FileSystem`` / ``GcsFileSystem`` / ``AzureFileSystem`` configured from the
same options (C++ reads on pyarrow's threads; see docs/object-stores.md for the
measurement).

Paths are pyarrow's: ``bucket/key`` (``container/key`` on Azure), so a path means the same
object to the store and to :attr:`fs`.

Options (:func:`normalise_options`): the keys of obstore's configurations, with or without
their ``aws_`` / ``google_`` / ``azure_`` prefix (``endpoint``, ``region``,
``access_key_id``, ``secret_access_key``, ``session_token``, ``allow_http``, ...), plus
``max_retries`` and ``retry_timeout`` (seconds). What is not given is read from the
standard environment variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ALLOW_HTTP``, ...).

Commits: :meth:`ObjectStore.create` is put-if-absent. The first commit through a store in a
process checks that the server honours it (a create of a probe object kept in the index
folder must be refused: one request; two where the probe is new); a server that accepts
both, or a store configured without conditional puts (``conditional_put="disabled"``), raises
:class:`~arrowidx.errors.CommitUnsupportedError` naming the store and the option, before
anything is uploaded. A create whose response was lost and that was retried finds its own
bytes in place and counts as created.

Transient failures (network, timeouts, 5xx, throttling) are retried by the client with
exponential backoff, a bounded number of times (``max_retries``, default 3, within
``retry_timeout``, default 30 s), then raise
:class:`~arrowidx.errors.StoreUnavailableError`; refused credentials or permissions raise
:class:`~arrowidx.errors.AccessDeniedError` naming the object.
"""

from __future__ import annotations

import difflib
import os
import posixpath
import threading
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from . import facts
from .errors import (
    AccessDeniedError,
    ArrowIdxError,
    CommitUnsupportedError,
    OptionError,
    StorageError,
    StoreUnavailableError,
)
from .storage import ObjectChangedError, ObjectInfo, Store, register, same_object, storage_error

#: URI schemes and the cloud each names.
SCHEMES = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "az": "azure", "abfs": "azure", "abfss": "azure",
           "azure": "azure", "adl": "azure"}  # fmt: skip

# Stat this many paths or fewer with one HEAD each (in parallel); more: one listing per folder.
_HEAD_AT_MOST = 4
_DEFAULT_RETRIES = 3
_DEFAULT_RETRY_TIMEOUT = 30.0

# Client (HTTP) options, the same for every cloud (obstore's ClientConfig).
_CLIENT_KEYS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type", "http1_only",
    "http2_only", "http2_keep_alive_interval", "http2_keep_alive_timeout", "http2_keep_alive_while_idle",
    "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate", "proxy_excludes",
    "randomize_addresses", "read_timeout", "timeout", "user_agent",
})  # fmt: skip
_RETRY_KEYS = frozenset({"max_retries", "retry_timeout"})

# Each cloud's configuration keys (obstore's S3Config / GCSConfig / AzureConfig), and the
# aliases other libraries use for them.
_CONFIG_KEYS = {
    "s3": frozenset({
        "access_key_id", "secret_access_key", "session_token", "region", "default_region", "endpoint",
        "aws_endpoint_url_s3", "bucket", "checksum_algorithm", "conditional_put", "copy_if_not_exists",
        "container_credentials_relative_uri", "container_credentials_full_uri",
        "container_authorization_token_file", "disable_tagging", "disable_bulk_delete", "imdsv1_fallback",
        "metadata_endpoint", "request_payer", "role_arn", "role_session_name", "server_side_encryption",
        "skip_signature", "sse_bucket_key_enabled", "sse_kms_key_id", "sts_endpoint", "unsigned_payload",
        "virtual_hosted_style_request", "web_identity_token_file", "s3_express",
    }),
    "gcs": frozenset({"service_account", "service_account_key", "base_url", "bearer_token", "bucket",
                      "application_credentials", "skip_signature"}),
    "azure": frozenset({
        "account_name", "account_key", "client_id", "client_secret", "credential_type", "tenant_id",
        "authority_host", "sas_key", "token", "use_emulator", "use_fabric_endpoint", "encryption_key",
        "endpoint", "msi_endpoint", "object_id", "msi_resource_id", "federated_token_file", "use_azure_cli",
        "skip_signature", "container_name", "disable_tagging", "storage_account_name", "storage_account_key",
    }),
}  # fmt: skip
_PREFIXES = {"s3": ("aws_",), "gcs": ("google_", "gcs_"), "azure": ("azure_storage_", "azure_")}
_ALIASES = {
    "s3": {"endpoint_url": "endpoint", "endpoint_override": "endpoint", "access_key": "access_key_id",
           "secret_key": "secret_access_key", "key": "access_key_id", "secret": "secret_access_key",
           "token": "session_token", "region_name": "region", "virtual_hosted_style": "virtual_hosted_style_request",
           "anonymous": "skip_signature"},
    "gcs": {"service_account_path": "service_account", "token": "bearer_token", "endpoint": "base_url",
            "anonymous": "skip_signature"},
    "azure": {"storage_account_name": "account_name", "storage_account_key": "account_key", "sas_token": "sas_key",
              "anonymous": "skip_signature"},
}  # fmt: skip
# Environment variables read when an option is not given (obstore reads the same ones).
_ENV = {
    "s3": {"access_key_id": "AWS_ACCESS_KEY_ID", "secret_access_key": "AWS_SECRET_ACCESS_KEY",
           "session_token": "AWS_SESSION_TOKEN", "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
           "endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"), "allow_http": "AWS_ALLOW_HTTP",
           "skip_signature": "AWS_SKIP_SIGNATURE", "virtual_hosted_style_request": "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
           "conditional_put": "AWS_CONDITIONAL_PUT"},
    "gcs": {"base_url": "GOOGLE_BASE_URL", "service_account": ("GOOGLE_SERVICE_ACCOUNT", "GOOGLE_APPLICATION_CREDENTIALS"),
            "bearer_token": "GOOGLE_BEARER_TOKEN"},
    "azure": {"account_name": "AZURE_STORAGE_ACCOUNT_NAME", "account_key": "AZURE_STORAGE_ACCOUNT_KEY",
              "sas_key": "AZURE_STORAGE_SAS_KEY", "endpoint": "AZURE_STORAGE_ENDPOINT",
              "use_emulator": "AZURE_STORAGE_USE_EMULATOR", "allow_http": "AZURE_ALLOW_HTTP"},
}  # fmt: skip
_SECRET_WORDS = ("secret", "key", "token", "password", "sas", "credential", "signature")


def is_object_store_uri(source: Any) -> bool:
    """Whether ``source`` is a string naming an object store (``s3://``, ``gs://``, ``az://``...)."""
    if not isinstance(source, str) or "://" not in source:
        return False
    return source.split("://", 1)[0].lower() in SCHEMES


def split_uri(uri: str) -> tuple[str, str, str]:
    """``(cloud, bucket, key)`` of an object-store URI (``cloud``: s3, gcs or azure).

    Credentials in the URI (a query string, ``user:password@``) are refused: they end up in
    logs and shell histories; give them as ``storage_options`` or environment variables.
    """
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    cloud = SCHEMES.get(scheme)
    if cloud is None:
        raise OptionError(f"{uri}: not an object-store URI (expected one of {', '.join(sorted(SCHEMES))}://)")
    if parts.query or parts.fragment or "?" in uri:
        raise OptionError(
            f"{_redact_uri(uri)}: options in the URI's query string are not read (they would leak credentials into"
            " logs); pass them as storage_options={...} (CLI: --storage-option KEY=VALUE) or set the environment"
            " variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...)"
        )
    netloc = parts.netloc
    if cloud == "azure" and "@" in netloc:  # abfs://container@account.dfs.core.windows.net/path
        container, _, host = netloc.partition("@")
        bucket = container
    elif "@" in netloc or ":" in netloc:
        raise OptionError(f"{_redact_uri(uri)}: credentials or a port in the URI are not read; pass storage_options")
    else:
        bucket = netloc
    if not bucket:
        raise OptionError(f"{uri}: no bucket in the URI (expected {scheme}://BUCKET/PATH)")
    key = parts.path.strip("/")
    return cloud, bucket, key


def _redact_uri(uri: str) -> str:
    return uri.split("?", 1)[0] + ("?..." if "?" in uri else "")


def _truthy(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def normalise_options(cloud: str, storage_options: Mapping[str, Any] | None, *, env: Mapping[str, str] | None = None,
                      uri: str = "") -> dict[str, Any]:  # fmt: skip
    """The options of one store: ``storage_options`` under obstore's names (prefixes and
    aliases resolved), then what the environment says for the keys not given. Unknown keys
    raise :class:`~arrowidx.errors.OptionError` with a did-you-mean."""
    env = os.environ if env is None else env
    known = _CONFIG_KEYS[cloud] | _CLIENT_KEYS | _RETRY_KEYS
    out: dict[str, Any] = {}
    for raw_key, value in (storage_options or {}).items():
        key = str(raw_key).strip().lower().replace("-", "_")
        if key not in known:
            for prefix in _PREFIXES[cloud]:
                if key.startswith(prefix) and key[len(prefix) :] in known | set(_ALIASES[cloud]):
                    key = key[len(prefix) :]
                    break
            key = _ALIASES[cloud].get(key, key)
        if key not in known:
            hint = difflib.get_close_matches(key, sorted(known | set(_ALIASES[cloud])), n=1)
            raise OptionError(
                f"{uri or cloud}: unknown storage option {raw_key!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + f"; see docs/object-stores.md for the options of {cloud}"
            )
        if value is None:
            continue
        out[key] = value
    for key, names in _ENV[cloud].items():
        if key in out:
            continue
        for name in (names,) if isinstance(names, str) else names:
            if env.get(name):
                out[key] = env[name]
                break
    if cloud == "s3" and "endpoint" in out and "allow_http" not in out and str(out["endpoint"]).startswith("http://"):
        pass  # obstore refuses plain HTTP unless allow_http is given: its message says so
    return out


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, timedelta):
        return value.total_seconds()
    text = str(value).strip().lower()
    for suffix, scale in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if text.endswith(suffix) and text[: -len(suffix)].replace(".", "", 1).isdigit():
            return float(text[: -len(suffix)]) * scale
    try:
        return float(text)
    except ValueError:
        raise OptionError(f"storage option {what}: expected seconds (or '500ms', '30s'), got {value!r}") from None


def _describe_options(options: Mapping[str, Any]) -> str:
    shown = []
    for key in sorted(options):
        value = options[key]
        secret = any(word in key for word in _SECRET_WORDS) and key not in ("disable_tagging",)
        shown.append(f"{key}={'***' if secret else value}")
    return ", ".join(shown)


#: The put-if-absent probe (:meth:`ObjectStore.require_create`), kept in a lake's index
#: folder (vacuum keeps it): the next process checks the store with one refused create.
PROBE = "put-if-absent-probe"
PROBE_BYTES = b"arrowidx: a create of this object must be refused (If-None-Match: *)\n"


class ObjectStore(Store):
    """One bucket (or Azure container) of an object store (see the module docstring)."""

    can_create = True
    stamps = True
    plans_from_manifest = True

    def __init__(self, cloud: str, bucket: str, options: Mapping[str, Any] | None = None, *, client: Any = None,
                 fs: pafs.FileSystem | None = None):  # fmt: skip
        self.cloud = cloud
        self.bucket = bucket
        self.options = dict(options or {})
        self._client = client if client is not None else _obstore_client(cloud, bucket, self.options)
        self.fs = fs if fs is not None else _pyarrow_filesystem(cloud, bucket, self.options)
        endpoint = self.options.get("endpoint") or self.options.get("base_url") or self.options.get("account_name") or ""
        self.key = f"{cloud}://{endpoint}/{bucket}"
        self._create_checked: bool | None = None
        self._check_lock = threading.Lock()

    def __reduce__(self):
        """Pickled as its bucket and options: a Spark executor re-opens the same store."""
        return (_reopen, (self.cloud, self.bucket, self.options))

    # -- paths ---------------------------------------------------------------------------
    def _key(self, path: str) -> str:
        path = path.lstrip("/")
        if path == self.bucket:
            return ""
        if not path.startswith(self.bucket + "/"):
            raise ArrowIdxError(f"{path}: not in the bucket {self.bucket} of {self.describe()}")
        return path[len(self.bucket) + 1 :].strip("/")

    def _path(self, key: str) -> str:
        return f"{self.bucket}/{key}"

    def _info(self, meta: Mapping[str, Any]) -> ObjectInfo:
        modified = meta.get("last_modified")
        # whole seconds: a listing says milliseconds, a HEAD only seconds (the ETag is the stamp)
        mtime_ns = int(modified.timestamp()) * 1_000_000_000 if modified is not None else None
        return ObjectInfo(self._path(meta["path"]), int(meta["size"]), mtime_ns, meta.get("e_tag") or meta.get("version"))

    # -- reads ---------------------------------------------------------------------------
    def list(self, folder: str, *, recursive: bool = True, hidden: bool = False, missing_ok: bool = False) -> list[ObjectInfo]:
        import obstore

        prefix = self._key(folder)
        out: list[ObjectInfo] = []
        try:
            if recursive and hidden:  # everything below: one paginated listing
                metas = [m for batch in obstore.list(self._client, prefix or None) for m in batch]
                found = bool(metas)
            else:  # by folder, so hidden folders (_arrowidx/) are never listed below
                result = obstore.list_with_delimiter(self._client, prefix or None)
                metas = list(result["objects"])
                found = bool(metas) or bool(result["common_prefixes"])
                if recursive:
                    for sub in result["common_prefixes"]:
                        if hidden or not posixpath.basename(sub.rstrip("/")).startswith(("_", ".")):
                            metas.extend(m for batch in obstore.list(self._client, sub) for m in batch)
        except Exception as e:  # noqa: BLE001 (classified)
            raise self._error(e, folder, "folder") from None
        if not found and not missing_ok:
            raise FileNotFoundError(f"{folder}: no such folder (no object under it) in {self.describe()}")
        cut = len(prefix) + 1 if prefix else 0
        # Folder markers (an empty ``lake/`` object, written by pyarrow's create_dir, Hadoop
        # and consoles) come back from obstore without their slash: an empty object named
        # like a folder of the listing is one, not a data file.
        folders = {prefix} | {key.rsplit("/", i)[0] for key in (m["path"] for m in metas) for i in range(1, key.count("/") + 1)}
        for meta in metas:
            key = meta["path"]
            if key.endswith("/") or (meta["size"] == 0 and key in folders):
                continue  # a folder marker
            if not hidden and any(part.startswith(("_", ".")) for part in key[cut:].split("/")):
                continue
            out.append(self._info(meta))
        out.sort(key=lambda i: i.path)
        return out

    def stat(self, paths: list[str]) -> list[ObjectInfo | None]:
        """One HEAD per path for a few paths (in parallel); for more, one listing per folder
        they are in (a LIST returns up to 1,000 objects with their sizes and ETags)."""
        paths = list(paths)
        if not paths:
            return []
        if len(paths) <= _HEAD_AT_MOST:
            if len(paths) == 1:
                return [self._head(paths[0])]
            from .facts import executor

            return list(executor().map(self._head, paths))
        folders: dict[str, list[int]] = {}
        for i, path in enumerate(paths):
            folders.setdefault(posixpath.dirname(path.rstrip("/")), []).append(i)
        out: list[ObjectInfo | None] = [None] * len(paths)
        for folder, where in folders.items():
            if len(where) <= _HEAD_AT_MOST:
                for i in where:
                    out[i] = self._head(paths[i])
                continue
            listed = {info.path: info for info in self.list(folder, recursive=False, hidden=True, missing_ok=True)}
            for i in where:
                out[i] = listed.get(paths[i].lstrip("/"))
        return out

    def _head(self, path: str) -> ObjectInfo | None:
        import obstore

        key = self._key(path)
        if not key:
            return None
        try:
            return self._info(obstore.head(self._client, key))
        except FileNotFoundError:
            return None
        except Exception as e:  # noqa: BLE001 (classified)
            raise self._error(e, path, "file") from None

    def get(self, path: str, what: str = "file") -> bytes:
        import obstore

        try:
            return obstore.get(self._client, self._key(path)).bytes().to_bytes()
        except FileNotFoundError:
            raise FileNotFoundError(path) from None
        except Exception as e:  # noqa: BLE001 (classified)
            raise self._error(e, path, what) from None

    def get_ranges(self, path: str, ranges: list[tuple[int, int]], what: str = "file") -> list[bytes]:
        """The ranges, coalesced by the client into few requests (ranges closer than 1 MiB
        share one), fetched in parallel. A range past the end of the object is cut there."""
        import obstore

        if not ranges:
            return []
        key = self._key(path)
        wanted = [(start, length) for start, length in ranges if length > 0]
        try:
            if len(wanted) == 1:
                start, length = wanted[0]
                blobs = [obstore.get_range(self._client, key, start=start, length=length)]
            else:
                blobs = obstore.get_ranges(self._client, key, starts=[s for s, _ in wanted],
                                           lengths=[n for _, n in wanted]) if wanted else []  # fmt: skip
        except FileNotFoundError:
            raise FileNotFoundError(path) from None
        except Exception as e:  # noqa: BLE001 (classified)
            if "range" in str(e).lower() and "not satisf" in str(e).lower() or "InvalidRange" in str(e):
                return self._ranges_within(path, ranges, what)
            raise self._error(e, path, what) from None
        got = iter(blobs)
        return [bytes(next(got)) if length > 0 else b"" for _, length in ranges]

    def _ranges_within(self, path: str, ranges: list[tuple[int, int]], what: str) -> list[bytes]:
        """Ranges reaching past the end: cut at the object's size (asked once)."""
        info = self._head(path)
        if info is None:
            raise FileNotFoundError(path)
        cut = [(min(start, info.size), max(0, min(length, info.size - start))) for start, length in ranges]
        if not any(length for _, length in cut):
            return [b"" for _ in ranges]
        return self.get_ranges(path, cut, what)

    def get_if_same(self, path: str, expect: ObjectInfo, what: str = "file") -> bytes:
        """The whole object in one GET with ``If-Match`` on its ETag (the stamp): a
        replaced object is :class:`~arrowidx.storage.ObjectChangedError`, never read."""
        return self._get_if_same(path, expect, what, None)

    def open_if_same(self, path: str, expect: ObjectInfo, what: str = "file") -> pa.NativeFile:
        """A random-access file whose every ranged GET carries ``If-Match`` on the ETag."""
        if expect.stamp is None:  # (a listing without ETags): checked once, by a HEAD
            if not same_object(self._head(path), expect):
                raise ObjectChangedError(path)
        return pa.PythonFile(_ConditionalReader(self, path, expect, what), mode="r")

    def _get_if_same(self, path: str, expect: ObjectInfo, what: str, span: tuple[int, int] | None) -> bytes:
        import obstore
        from obstore.exceptions import PreconditionError

        options: dict[str, Any] = {}
        if expect.stamp is not None:
            options["if_match"] = expect.stamp
        elif span is None and not same_object(self._head(path), expect):
            raise ObjectChangedError(path)
        if span is not None:
            options["range"] = span
        try:
            data = obstore.get(self._client, self._key(path), options=options).bytes().to_bytes()
        except PreconditionError:
            raise ObjectChangedError(path) from None
        except FileNotFoundError:
            raise FileNotFoundError(path) from None
        except Exception as e:  # noqa: BLE001 (classified)
            raise self._error(e, path, what) from None
        if span is None and len(data) != expect.size:
            raise ObjectChangedError(path, f"holds {len(data)} bytes, {expect.size} expected")
        return data

    # -- writes --------------------------------------------------------------------------
    def put(self, path: str, data: bytes) -> None:
        """One PUT: atomic on every object store (readers see the old or the new object)."""
        import obstore

        try:
            obstore.put(self._client, self._key(path), data)
        except Exception as e:  # noqa: BLE001 (classified)
            raise self._error(e, path, "file") from None

    def create(self, path: str, data: bytes) -> bool:
        """Put-if-absent: False when ``path`` exists. Checks once per store that the server
        honours it (:meth:`require_create`)."""
        self.require_create(path)
        return self._create(path, data)

    def _create(self, path: str, data: bytes) -> bool:
        if self._put_if_absent(path, data):
            return True
        # a create retried after its response was lost finds its own bytes: it landed
        try:
            return self.get(path, "file") == data
        except FileNotFoundError:
            return False

    def _put_if_absent(self, path: str, data: bytes) -> bool:
        """One conditional PUT: True when it created ``path``, False when the server refused
        it (the object exists)."""
        import obstore
        from obstore.exceptions import AlreadyExistsError, NotSupportedError, PreconditionError

        try:
            obstore.put(self._client, self._key(path), data, mode="create")
            return True
        except (AlreadyExistsError, PreconditionError):
            return False
        except NotSupportedError as e:
            raise self._unsupported(path, str(e)) from None
        except Exception as e:  # noqa: BLE001 (classified)
            if "not implemented" in str(e).lower() or "not supported" in str(e).lower():
                raise self._unsupported(path, _short(e)) from None
            raise self._error(e, path, "file") from None

    def require_create(self, path: str, *, own_folder: bool = False) -> None:
        """Raise :class:`~arrowidx.errors.CommitUnsupportedError` unless this store creates
        objects only if absent. Checked once per store, with a probe object next to ``path``.
        In arrowidx's own index folder (``own_folder``) the probe is kept (:data:`PROBE`): a
        create of it that the server refuses proves the condition honoured (one request);
        where it is absent (the first commit, or removed) it is created and a second create
        must be refused. Elsewhere (a Paimon table's folder) a probe of a new name is created
        twice and removed. A server that accepts both creates ignores the condition: the
        probe is removed and every commit refused."""
        if self._create_checked:
            return
        with self._check_lock:
            if self._create_checked:
                return
            if str(self.options.get("conditional_put", "")).lower() == "disabled":
                raise self._unsupported(path, "conditional_put is 'disabled'")
            folder = posixpath.dirname(path)
            if own_folder:
                probe = posixpath.join(folder, PROBE)
                honoured = not self._put_if_absent(probe, PROBE_BYTES) or not self._put_if_absent(probe, PROBE_BYTES)
                if not honoured:
                    self.delete_many([probe])
            else:
                probe = posixpath.join(folder, f".tmp-put-if-absent-probe-{uuid.uuid4().hex}")
                try:
                    honoured = self._put_if_absent(probe, b"1") and not self._put_if_absent(probe, b"2")
                finally:
                    self.delete_many([probe])
            if not honoured:
                raise self._unsupported(path, "the server accepted a second put-if-absent of one object"
                                              " (If-None-Match: * ignored)")  # fmt: skip
            self._create_checked = True

    def _unsupported(self, path: str, why: str) -> CommitUnsupportedError:
        option = {"s3": "conditional_put", "gcs": "(none: GCS always can)", "azure": "(none: Azure always can)"}[self.cloud]
        return CommitUnsupportedError(
            f"{path}: {self.describe()} cannot create an object only if it is absent ({why}), so two writers could"
            f" both commit one version and one would be lost; nothing was committed. Use a store that honours"
            f" If-None-Match (AWS S3, MinIO, Cloudflare R2, GCS, Azure), or set the storage option {option}"
            " to a mode the server supports (see docs/object-stores.md)"
        )

    def delete(self, path: str) -> bool:
        import obstore

        try:
            if self._head(path) is None:
                return False
            obstore.delete(self._client, self._key(path))
            return True
        except FileNotFoundError:
            return False
        except Exception as e:  # noqa: BLE001 (classified)
            raise self._error(e, path, "file") from None

    def delete_many(self, paths: list[str]) -> None:
        """Delete objects (batched where the store can: one request per 1,000 on S3)."""
        import obstore

        if not paths:
            return
        try:
            obstore.delete(self._client, [self._key(p) for p in paths])
        except FileNotFoundError:
            pass
        except Exception as e:  # noqa: BLE001 (classified)
            raise self._error(e, paths[0], "file") from None

    # -- messages ------------------------------------------------------------------------
    def describe(self) -> str:
        scheme = {"s3": "s3", "gcs": "gs", "azure": "az"}[self.cloud]
        endpoint = self.options.get("endpoint") or self.options.get("base_url")
        return f"{scheme}://{self.bucket}" + (f" at {endpoint}" if endpoint else "")

    def _error(self, error: BaseException, path: str, what: str) -> ArrowIdxError:
        """Classify what obstore raised (see :func:`arrowidx.storage.storage_error`)."""
        if isinstance(error, ArrowIdxError):
            return error
        from obstore.exceptions import PermissionDeniedError, UnauthenticatedError

        text = _short(error)
        if "169.254.169.254" in str(error) or "latest/api/token" in str(error):
            return AccessDeniedError(f"{self.describe()}: no credentials for the {what}: none were given and the"
                                     " instance metadata service did not answer; give access_key_id and"
                                     " secret_access_key (storage_options or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY),"
                                     f" or skip_signature=true for a public bucket ({text})", path=path)  # fmt: skip
        if isinstance(error, (PermissionDeniedError, UnauthenticatedError)) or _is_denied(str(error)):
            return AccessDeniedError(f"{self.describe()} denied access to the {what} (check the credentials and"
                                     f" permissions): {text}", path=path)  # fmt: skip
        lower = str(error).lower()
        if any(word in lower for word in ("error sending request", "connection", "timed out", "timeout", "dns",
                                          "503", "500", "502", "504", "429", "slowdown", "slow down", "throttl",
                                          "retries", "service unavailable")):  # fmt: skip
            return StoreUnavailableError(f"{self.describe()} could not be reached for the {what} (retried"
                                         f" {self.options.get('max_retries', _DEFAULT_RETRIES)} times): {text}",
                                         path=path)  # fmt: skip
        classified = storage_error(error, path, what)
        if type(classified) is StorageError:
            return StorageError(f"{self.describe()}: cannot read or write the {what}: {text}", path=path)
        return classified


class _ConditionalReader:
    """A read-only file over one object version for ``pa.PythonFile``: each read is a
    ranged GET with ``If-Match`` (:meth:`ObjectStore.open_if_same`)."""

    def __init__(self, store: ObjectStore, path: str, expect: ObjectInfo, what: str):
        self.store, self.path, self.expect, self.what = store, path, expect, what
        self.pos = 0
        self.closed = False

    def read(self, n: int = -1) -> bytes:
        end = self.expect.size if n is None or n < 0 else min(self.expect.size, self.pos + n)
        if end <= self.pos:
            return b""
        data = self.store._get_if_same(self.path, self.expect, self.what, (self.pos, end))
        self.pos += len(data)
        return data

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos if whence == 0 else self.pos + pos if whence == 1 else self.expect.size + pos
        return self.pos

    def tell(self) -> int:
        return self.pos

    def size(self) -> int:
        return self.expect.size

    def close(self) -> None:
        self.closed = True

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True


def _short(error: BaseException) -> str:
    """The store's message without its debug dump (obstore appends the request's internals)."""
    text = str(error).split("\n\nDebug source:", 1)[0].strip()
    code = _xml_field(text, "Code")
    message = _xml_field(text, "Message")
    head = text.split("<?xml", 1)[0].strip().rstrip(":")
    if code or message:
        head = f"{head}: {code}{': ' if code and message else ''}{message}"
    return head if len(head) <= 600 else head[:600] + "..."


def _xml_field(text: str, name: str) -> str:
    start = text.find(f"<{name}>")
    end = text.find(f"</{name}>")
    return text[start + len(name) + 2 : end] if 0 <= start < end else ""


def _is_denied(text: str) -> bool:
    lower = text.lower()
    return any(word in lower for word in ("403 forbidden", "401 unauthorized", "accessdenied", "signaturedoesnotmatch",
                                          "invalidaccesskeyid", "expiredtoken", "invalidtoken", "authorizationfailure",
                                          "authenticationfailed"))  # fmt: skip


# ------------------------------------------------------------------------------------------
# the clients
# ------------------------------------------------------------------------------------------


def _retry_config(options: Mapping[str, Any]) -> dict:
    retries = int(options.get("max_retries", _DEFAULT_RETRIES))
    timeout = _seconds(options.get("retry_timeout", _DEFAULT_RETRY_TIMEOUT), "retry_timeout")
    return {"max_retries": retries, "retry_timeout": timedelta(seconds=timeout),
            "backoff": {"init_backoff": timedelta(milliseconds=100), "max_backoff": timedelta(seconds=5), "base": 2}}  # fmt: skip


def _obstore_client(cloud: str, bucket: str, options: Mapping[str, Any]) -> Any:
    try:
        from obstore.exceptions import UnknownConfigurationKeyError
        from obstore.store import AzureStore, GCSStore, S3Store
    except ImportError:  # pragma: no cover (obstore is a dependency)
        raise ArrowIdxError("object stores need obstore: pip install obstore") from None
    config = {k: v for k, v in options.items() if k not in _CLIENT_KEYS and k not in _RETRY_KEYS}
    client = {k: v for k, v in options.items() if k in _CLIENT_KEYS}
    for flag in ("allow_http", "allow_invalid_certificates", "http1_only", "http2_only", "randomize_addresses"):
        if flag in client:
            client[flag] = _truthy(client[flag])
    for flag in ("skip_signature", "virtual_hosted_style_request", "unsigned_payload", "use_emulator",
                 "disable_tagging", "imdsv1_fallback", "use_azure_cli", "use_fabric_endpoint"):  # fmt: skip
        if flag in config:
            config[flag] = _truthy(config[flag])
    config.pop("bucket", None)
    config.pop("container_name", None)
    kind = {"s3": S3Store, "gcs": GCSStore, "azure": AzureStore}[cloud]
    try:
        return kind(bucket, config=config, client_options=client or None, retry_config=_retry_config(options))
    except UnknownConfigurationKeyError as e:
        raise OptionError(f"{cloud}://{bucket}: {_short(e)}") from None
    except Exception as e:  # noqa: BLE001 (configuration errors: a bad value)
        raise OptionError(f"{cloud}://{bucket}: the storage options do not configure a client ({_short(e)});"
                          f" given: {_describe_options(options)}") from None  # fmt: skip


def _pyarrow_filesystem(cloud: str, bucket: str, options: Mapping[str, Any]) -> pafs.FileSystem:
    """pyarrow's own filesystem for the same objects, from the same options (data reads)."""
    timeout = options.get("timeout")
    connect = options.get("connect_timeout")
    if cloud == "s3":
        kwargs: dict[str, Any] = {"allow_bucket_creation": False, "allow_bucket_deletion": False}
        if options.get("access_key_id") is not None:
            kwargs["access_key"] = str(options["access_key_id"])
            kwargs["secret_key"] = str(options.get("secret_access_key", ""))
            if options.get("session_token"):
                kwargs["session_token"] = str(options["session_token"])
        if _truthy(options.get("skip_signature", False)):
            kwargs["anonymous"] = True
        region = options.get("region") or options.get("default_region")
        if region:
            kwargs["region"] = str(region)
        endpoint = options.get("aws_endpoint_url_s3") or options.get("endpoint")
        if endpoint:
            endpoint = str(endpoint)
            kwargs["endpoint_override"] = endpoint
            kwargs["scheme"] = "http" if endpoint.startswith("http://") else "https"
        if _truthy(options.get("virtual_hosted_style_request", False)):
            kwargs["force_virtual_addressing"] = True
        if timeout is not None:
            kwargs["request_timeout"] = _seconds(timeout, "timeout")
        if connect is not None:
            kwargs["connect_timeout"] = _seconds(connect, "connect_timeout")
        kwargs["retry_strategy"] = pafs.AwsStandardS3RetryStrategy(max_attempts=int(options.get("max_retries", _DEFAULT_RETRIES)) + 1)
        if options.get("proxy_url"):
            kwargs["proxy_options"] = str(options["proxy_url"])
        return pafs.S3FileSystem(**kwargs)
    if cloud == "gcs":
        kwargs = {}
        if _truthy(options.get("skip_signature", False)):
            kwargs["anonymous"] = True
        if options.get("bearer_token"):
            from datetime import datetime, timezone

            kwargs["access_token"] = str(options["bearer_token"])
            kwargs["credential_token_expiration"] = datetime.now(timezone.utc) + timedelta(hours=1)
        base = options.get("base_url")
        if base:
            parts = urlsplit(str(base))
            kwargs["endpoint_override"] = parts.netloc or str(base)
            kwargs["scheme"] = parts.scheme or "https"
        if options.get("service_account") and "GOOGLE_APPLICATION_CREDENTIALS" not in os.environ:
            os.environ["GOOGLE_APPLICATION_CREDENTIALS"] = str(options["service_account"])  # what google-cloud-cpp reads
        if timeout is not None:
            kwargs["retry_time_limit"] = timedelta(seconds=_seconds(timeout, "timeout"))
        return pafs.GcsFileSystem(**kwargs)
    kwargs = {}
    if options.get("account_name"):
        kwargs["account_name"] = str(options["account_name"])
    if options.get("account_key"):
        kwargs["account_key"] = str(options["account_key"])
    if options.get("sas_key"):
        kwargs["sas_token"] = str(options["sas_key"])
    if options.get("client_id"):
        kwargs["client_id"] = str(options["client_id"])
    if options.get("client_secret"):
        kwargs["client_secret"] = str(options["client_secret"])
    if options.get("tenant_id"):
        kwargs["tenant_id"] = str(options["tenant_id"])
    endpoint = options.get("endpoint")
    if _truthy(options.get("use_emulator", False)) and not endpoint:
        endpoint = "http://127.0.0.1:10000"
    if endpoint:
        parts = urlsplit(str(endpoint))
        kwargs["blob_storage_authority"] = parts.netloc
        kwargs["blob_storage_scheme"] = parts.scheme or "https"
        kwargs["dfs_storage_authority"] = parts.netloc
        kwargs["dfs_storage_scheme"] = parts.scheme or "https"
    try:
        return pafs.AzureFileSystem(**kwargs)
    except (AttributeError, TypeError, ImportError) as e:
        raise OptionError(f"az://{bucket}: this pyarrow cannot read Azure with these options ({e})") from None


# ------------------------------------------------------------------------------------------
# one store per bucket and options, per process
# ------------------------------------------------------------------------------------------

def _reopen(cloud: str, bucket: str, options: dict[str, Any]) -> ObjectStore:
    """The process's one store of a bucket and options (:func:`arrowidx.facts.interned`)."""
    ident = ("object store", cloud, bucket, tuple(sorted((k, str(v)) for k, v in options.items())))
    return facts.interned(ident, lambda: register(ObjectStore(cloud, bucket, options)))


def open_store(uri: str, storage_options: Mapping[str, Any] | None = None) -> tuple[ObjectStore, str]:
    """``(store, path)`` for an object-store URI: the store of its bucket with these options
    (one per process: its facts, connections and pyarrow filesystem are shared), and the
    path of the URI in it (``bucket/key``)."""
    cloud, bucket, key = split_uri(uri)
    options = normalise_options(cloud, storage_options, uri=_redact_uri(uri))
    return _reopen(cloud, bucket, options), f"{bucket}/{key}" if key else bucket
