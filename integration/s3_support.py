"""An S3 emulator for tests and benchmarks: ``moto_server`` on 127.0.0.1, on a free port,
started as a child process and stopped by the caller (:class:`S3Server`).

moto checks ``If-None-Match: *`` and stores the object in two steps, so two PUTs racing for
one key could both pass the check (real S3 cannot). The server started here runs its
``PutObject`` one at a time, as S3 is atomic per key, so the tests with truly concurrent
writers test arrowidx's protocol, not moto's race; the tests of the protocol itself order
their writers deterministically (the fault hook) and do not depend on it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request

# The child: moto's server with PutObject serialised (see the module docstring).
_LAUNCH = """
import sys, threading
from moto.s3.responses import S3Response
_lock = threading.Lock()
_put = S3Response.put_object
def put_object(self, *args, **kwargs):
    with _lock:
        return _put(self, *args, **kwargs)
S3Response.put_object = put_object
from moto.server import main
main(["-H", "127.0.0.1", "-p", sys.argv[1]])
"""

ACCESS_KEY = "testing-key"
SECRET_KEY = "testing-secret"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """``moto_server`` in a child process; :meth:`stop` ends it (by its own process id)."""

    def __init__(self, timeout: float = 30.0):
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-c", _LAUNCH, str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONWARNINGS": "ignore"},
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto_server exited with code {self.process.returncode}")
            try:
                urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=1).read()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"moto_server did not answer on {self.endpoint} within {timeout:.0f}s") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    # -- set-up through the server's own API ---------------------------------------------
    def client(self, service: str = "s3", **keys):
        import boto3

        return boto3.client(service, endpoint_url=self.endpoint, region_name=REGION,
                            aws_access_key_id=keys.get("key", ACCESS_KEY),
                            aws_secret_access_key=keys.get("secret", SECRET_KEY))  # fmt: skip

    def create_bucket(self, name: str) -> None:
        self.client().create_bucket(Bucket=name)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        out, token = [], None
        while True:
            kwargs = {"Bucket": bucket, "Prefix": prefix, **({"ContinuationToken": token} if token else {})}
            page = self.client().list_objects_v2(**kwargs)
            out += [o["Key"] for o in page.get("Contents", [])]
            token = page.get("NextContinuationToken")
            if not token:
                return out

    def user_with_key(self, name: str = "arrowidx") -> tuple[str, str]:
        """An IAM user allowed everything, and its access key (for :meth:`authenticate`)."""
        iam = self.client("iam")
        iam.create_user(UserName=name)
        key = iam.create_access_key(UserName=name)["AccessKey"]
        policy = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
        iam.put_user_policy(UserName=name, PolicyName="all", PolicyDocument=json.dumps(policy))
        return key["AccessKeyId"], key["SecretAccessKey"]

    def authenticate(self, on: bool) -> None:
        """Make the server check signatures and keys (``on``), or accept any (the default)."""
        body = b"0" if on else b"inf"
        request = urllib.request.Request(self.endpoint + "/moto-api/reset-auth", data=body, method="POST",
                                         headers={"Content-Type": "application/octet-stream"})
        urllib.request.urlopen(request, timeout=10).read()

    def storage_options(self, **extra: str) -> dict[str, str]:
        return {"endpoint": self.endpoint, "access_key_id": ACCESS_KEY, "secret_access_key": SECRET_KEY,
                "region": REGION, "allow_http": "true", **extra}  # fmt: skip

    def environment(self) -> dict[str, str]:
        """The standard AWS_* variables naming this server (and nothing else)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_REGION": REGION, "AWS_ALLOW_HTTP": "true"}  # fmt: skip
