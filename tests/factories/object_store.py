"""A local S3-compatible server (moto's server mode) for landing zones on an object store."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from pyarrow import fs as pafs

from tests.factories import wait_for

MOTO = str(Path(sys.executable).with_name("moto_server"))
# moto accepts any credentials; pyarrow (like any S3 client) wants some, from the environment.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "cdcweb-test",
    "AWS_SECRET_ACCESS_KEY": "cdcweb-test",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


class S3Server:
    """moto_server on a free loopback port; ``uri(bucket, path)`` names a landing zone on it."""

    def __init__(self) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.proc = subprocess.Popen(
            [MOTO, "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        try:
            wait_for("moto_server to answer", self._answers, every=0.1)
        except BaseException:
            self.stop()
            raise
        os.environ.update(CREDENTIALS)

    def _answers(self) -> bool:
        if self.proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {self.proc.returncode}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{self.port}/", timeout=2).close()  # noqa: S310 - loopback
        except OSError:
            return False
        return True

    def uri(self, bucket: str, path: str = "landing") -> str:
        """Return a pyarrow URI of a folder in the bucket, creating the bucket."""
        options = f"endpoint_override=127.0.0.1:{self.port}&scheme=http&region=us-east-1"
        creator, _ = pafs.FileSystem.from_uri(f"s3://{bucket}?{options}&allow_bucket_creation=true")
        creator.create_dir(bucket)
        return f"s3://{bucket}/{path}?{options}"

    def stop(self) -> None:
        """Stop the server (and with it every object it held)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
