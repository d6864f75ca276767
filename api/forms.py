"""The API's input goes through the same Django forms the pages use: one place for every rule
(limits, model strings, cost limits, which sets may run). A field the caller leaves out takes
the form's initial value, so the API's defaults are the page's defaults."""

from __future__ import annotations

from django import forms

from api.problems import Refused


def form_checked(form_class: type[forms.Form], payload: dict, **form_kwargs) -> forms.Form:
    """A bound, valid `form_class` filled from `payload`; else a 400 naming each problem."""
    blank = form_class(**form_kwargs)
    data = {name: _initial(blank, name) for name in blank.fields}
    data |= {name: _form_value(value) for name, value in payload.items() if value is not None}
    form = form_class(data=data, **form_kwargs)
    if not form.is_valid():
        raise form_refused(form)
    return form


def form_refused(form: forms.Form, location: str = "body") -> Refused:
    """Every problem of the form: on one line in `detail`, each with its field in `errors`."""
    errors, problems = [], []
    for name, messages in form.errors.items():
        where = "" if name == "__all__" else f"{name}: "
        problems += [f"{where}{message}" for message in messages]
        place = location if name == "__all__" else f"{location}.{name}"
        errors += [{"location": place, "message": str(message)} for message in messages]
    return Refused(" ".join(problems), errors)


def _initial(form: forms.Form, name: str):
    value = form.get_initial_for_field(form.fields[name], name)
    if isinstance(form.fields[name], forms.BooleanField):
        return bool(value)
    return "" if value is None else value


def _form_value(value):
    """JSON values as a form's widgets read them: a list of model strings is one per line in
    a textarea, a list of ids stays a list (a multiple choice)."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "\n".join(value)
    return value
