"""A staff member's own personal access tokens for the JSON API: make one (shown once),
see them, revoke one."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from accounts.access import STAFF, role_required
from accounts.forms_tokens import TokenForm
from accounts.tokens import token_create, token_revoke, tokens_of


@role_required(*STAFF)
def api_tokens(request: HttpRequest) -> HttpResponse:
    form = TokenForm(request.POST or None)
    new_token = ""
    if request.method == "POST" and form.is_valid():
        token, new_token = token_create(user=request.user, **form.cleaned_data)
        form = TokenForm()  # the token is on the page once; the next page never shows it
    return render(
        request,
        "accounts/api_tokens.html",
        {
            "form": form,
            "tokens": tokens_of(request.user),
            "new_token": new_token,
            "now": timezone.now(),
        },
    )


@role_required(*STAFF)
@require_POST
def api_token_revoke(request: HttpRequest, pk: int) -> HttpResponse:
    token = get_object_or_404(tokens_of(request.user), pk=pk)
    token_revoke(token=token, actor=request.user)
    messages.success(request, f"Revoked {token}: it can no longer be used.")
    return redirect("api_tokens")
