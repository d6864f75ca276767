"""A mail backend that refuses like an unreachable SMTP server, for the retry tests."""

import smtplib

from django.core.mail.backends.locmem import EmailBackend


class RefusingBackend(EmailBackend):
    """Refuses the first `refusals` messages (set by the test), then delivers to the outbox."""

    refusals = 0

    def send_messages(self, messages):
        if RefusingBackend.refusals > 0:
            RefusingBackend.refusals -= 1
            raise smtplib.SMTPServerDisconnected("Connection unexpectedly closed")
        return super().send_messages(messages)
