"""kombu's filesystem transport with atomic message writes.

Stock kombu (5.7) creates a message file under its final name and then writes it; a
consumer in another process can move and read it in between, get an empty payload and
stop the whole worker ("Unrecoverable error: JSONDecodeError"), losing the message.
Measured here: it killed a test worker within a few hundred cross-process enqueues.
This transport writes to a hidden temporary name and renames it into place, so a
consumer only ever sees complete messages. cdcweb/settings.py selects it
(CELERY_BROKER_TRANSPORT) whenever the broker URL is filesystem://.
"""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.transport import filesystem
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    """A filesystem channel whose messages appear in the queue folder complete or not at all."""

    def _put(self, queue, payload, **kwargs):
        """Write the message to a temporary file, then rename it into the queue."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        # Other names in the folder are ignored by _get: it only takes '<id>.<queue>.msg'.
        tmp = os.path.join(self.data_folder_out, f".tmp-{uuid.uuid4().hex}")
        try:
            with open(tmp, "wb") as handle:
                handle.write(dumps(payload).encode())
            os.replace(tmp, final)
        except OSError as exc:
            raise filesystem.ChannelError(f"Cannot add file {final!r} to directory") from exc


class Transport(filesystem.Transport):
    """The filesystem transport, with atomic writes."""

    Channel = Channel
