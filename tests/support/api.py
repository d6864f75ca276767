"""Helpers of the API tests: its address and a token's header."""

API = "/api/v1"


def bearer(raw: str) -> dict:
    """The header a script sends with its personal access token."""
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
