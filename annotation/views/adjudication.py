"""Senior clinicians' pages: the adjudication queue and one adjudication.

Only senior clinicians reach them (anyone else is refused with the reason); an adjudication
is found by its own public_id within the projects the senior is enrolled in, so any other
answers 404. What the page shows is built by `adjudication.adjudication_context`, blinded on
the server like the review screen.
"""

from __future__ import annotations

from uuid import UUID

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from accounts.access import role_required
from accounts.models import Role
from annotation.forms.annotator import AdjudicationForm
from annotation.services import adjudication as service

annotator_only = role_required(Role.ANNOTATOR)


def _senior(request: HttpRequest) -> None:
    refusal = service.senior_refusal(request.user)
    if refusal:
        raise PermissionDenied(refusal)


@annotator_only
def adjudication_list(request: HttpRequest) -> HttpResponse:
    _senior(request)
    return render(
        request,
        "annotation/adjudications.html",
        {"adjudications": service.adjudication_queue(request.user)},
    )


@annotator_only
def adjudication_page(request: HttpRequest, public_id: UUID) -> HttpResponse:
    _senior(request)
    adjudication = service.adjudication_for(request.user, public_id)
    if adjudication is None:
        raise Http404("No such adjudication in your projects.")
    adjudication = service.adjudication_take_up(adjudication, request.user)  # 403 with why
    initial = {"score": adjudication.score, "rationale": adjudication.rationale}
    form = AdjudicationForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            service.adjudication_record(
                adjudication,
                adjudicator=request.user,
                score=form.cleaned_data["score"],
                rationale=form.cleaned_data["rationale"],
            )
        except ValidationError as error:
            for field, texts in error.message_dict.items():
                form.add_error(field if field in form.fields else None, texts)
        else:
            messages.success(request, "Adjudication saved.")
            return redirect("annotation:adjudications")
    context = service.adjudication_context(adjudication, request.user)
    return render(request, "annotation/adjudication.html", context | {"form": form})
