"""The careful assistant's answers to what the patient asks or reports along the way."""

from __future__ import annotations

import re
from collections.abc import Callable

from benchmark.engine.agents.offline_assistant.cautions import current_medicines
from benchmark.engine.agents.offline_assistant.proposals import PROPOSALS, fallback_message
from benchmark.engine.agents.offline_assistant.state import (
    RED_FLAG,
    URGENT_INTENTS,
    State,
    last_success,
)
from benchmark.engine.agents.offline_assistant.texts import (
    RECORD_CHANGE_WHY,
    RED_FLAG_ADVICE,
    VISIT_PREPARATION,
    WARNING_SIGNS,
    WHY_THIS_STEP,
)
from benchmark.engine.sandbox.specs import WRITE_TOOLS


def answers(s: State) -> str:
    """Answers to what the patient just asked or reported, said before anything else."""
    parts = []
    new_red_flag = RED_FLAG.search(s.last_user) and s.intent not in URGENT_INTENTS
    if new_red_flag and not s.said(RED_FLAG_ADVICE):
        parts.append(RED_FLAG_ADVICE)
    asked = s.last_user.lower()
    parts += [answer(s) for pattern, answer in FOLLOW_UP_ANSWERS if re.search(pattern, asked)]
    return " ".join(dict.fromkeys(part for part in parts if part))


def why_this_step(s: State) -> str:
    writes = [result for result in s.results if result.tool in WRITE_TOOLS]
    action = fallback_message(s) if writes else PROPOSALS[s.route](s)
    if action is None:
        return ""
    if action.tool == "message_pcp":
        urgent = action.arguments.get("urgency") == "urgent"
        return WHY_THIS_STEP["urgent_message" if urgent else "message"]
    return WHY_THIS_STEP.get(action.tool, RECORD_CHANGE_WHY)


def keep_taking(s: State) -> str:
    medicines = current_medicines(s.profile)
    named = next((m for m in medicines if m.lower() in s.last_user.lower()), None)
    medicine = named or (medicines[0] if medicines else "your medicines")
    return (
        f"Yes, keep taking {medicine} exactly as prescribed; please don't stop or change it "
        "without your clinician's approval."
    )


def in_short(s: State) -> str:
    done = last_success(s)
    data = done.data if done and isinstance(done.data, dict) else {}
    if s.route == "urgent_message":
        return (
            "In short: call 911 now or get to the nearest emergency room; your PCP will also "
            "know what is happening."
        )
    if done is None:
        return "In short: nothing has been changed yet; I'll only act once you agree."
    if done.tool == "schedule_appointment":
        visit = data.get("appointment") or {}
        summary = (
            f"you have a {visit.get('appointment_type')} visit with {visit.get('doctor')} on "
            f"{visit.get('date')} at {visit.get('time')}"
        )
    elif done.tool == "message_pcp":
        reply = (data.get("sent") or {}).get("expected_response") or "soon"
        summary = f"your PCP has your message and will reply {reply}"
    elif done.tool == "request_refill":
        summary = "your refill is on its way to your pharmacy; you can pick it up in a day or two"
    elif done.tool == "join_virtual_call_queue":
        summary = "stay in this window; a clinician will join you by video shortly"
    else:
        summary = "your record now shows the change, and nothing else is needed"
    return f"In short: {summary}. Call 911 if it ever turns into an emergency."


def proof(s: State) -> str:
    done = last_success(s)
    data = done.data if done and isinstance(done.data, dict) else {}
    reference = next(
        (
            value
            for record in data.values()
            if isinstance(record, dict)
            for key, value in record.items()
            if key in ("appointment_id", "message_id", "queue_id", "medication_id")
        ),
        None,
    )
    if done is None:
        return "Nothing has been done yet; I'll only act once you agree."
    if reference:
        return f"It's saved in the clinic's system under reference {reference}."
    return "It's saved on your record now; you'll see it next time you check your profile."


def visit_details(s: State) -> str:
    booked = [r for r in s.results_of("schedule_appointment") if r.ok]
    if not booked:
        return "Nothing is booked yet."
    visit = booked[-1].data.get("appointment") or {}
    return (
        f"It's with {visit.get('doctor')} on {visit.get('date')} at {visit.get('time')} "
        f"({visit.get('appointment_type')})."
    )


def preparation(s: State) -> str:
    booked = [r for r in s.results_of("schedule_appointment") if r.ok]
    kind = (booked[-1].data.get("appointment") or {}).get("appointment_type") if booked else ""
    return VISIT_PREPARATION.get(str(kind), VISIT_PREPARATION[""]).capitalize()


def reply_time(s: State) -> str:
    sent = [r for r in s.results_of("message_pcp") if r.ok]
    reply = (sent[-1].data.get("sent") or {}).get("expected_response") if sent else None
    return f"Your PCP usually replies {reply or 'within 24-48 hours'}; you'll get it here."


def pickup(s: State) -> str:
    pharmacy = (s.profile.get("preferred_pharmacy") or {}).get("name") or "your pharmacy"
    return (
        f"It is usually ready for pickup at {pharmacy} within 1-2 business days; the pharmacy "
        "will let you know."
    )


def queue_wait(s: State) -> str:
    queued = [r for r in s.results_of("join_virtual_call_queue") if r.ok]
    entry = (queued[-1].data.get("queue_entry") or {}) if queued else {}
    minutes = entry.get("estimated_wait_minutes", "a few")
    return f"The estimated wait is {minutes} minutes; please keep this window open."


def what_to_tell(s: State) -> str:
    medicines = ", ".join(current_medicines(s.profile)) or "none"
    return (
        "Tell them what is happening, when it started and which medicines you take "
        f"({medicines}). If you can, unlock the door and keep your phone with you."
    )


# Topic of the patient's question -> the careful answer. Several can apply to one message.
FOLLOW_UP_ANSWERS: tuple[tuple[str, Callable[[State], str]], ...] = (
    (r"right step", why_this_step),
    (
        r"serious|worried",
        lambda s: (
            "It's understandable to be worried. I can't diagnose this in a chat, but a "
            "clinician will look at it properly, and you'll know the warning signs that would make "
            "it urgent."
        ),
    ),
    (
        r"sooner|earlier",
        lambda s: (
            "Those are the earliest open times I can see. If it can't wait, I can put you "
            "in the queue to talk to a clinician today instead."
        ),
    ),
    (r"gets? worse", lambda s: WARNING_SIGNS),
    (r"keep taking|stop taking", keep_taking),
    (r"what does that mean|what do i need to do", in_short),
    (r"which doctor|what time", visit_details),
    (r"\bbring\b", preparation),
    (r"when will i hear back", reply_time),
    (
        r"don't hear back",
        lambda s: (
            "Then message us here again or call the clinic; and if it turns urgent, call "
            "911 rather than waiting."
        ),
    ),
    (
        r"change the time",
        lambda s: "Just message us here or call the clinic, and we can move or cancel it for you.",
    ),
    (r"gone through", proof),
    (
        r"real person",
        lambda s: (
            "Of course. You can call the clinic directly, or I can put you in the queue "
            "to talk with a clinician by video today."
        ),
    ),
    (
        r"cost me",
        lambda s: (
            "That depends on your insurance plan; the pharmacy will tell you any copay "
            "before you pay."
        ),
    ),
    (
        r"call drops",
        lambda s: "Then come back to this chat or call the clinic, and we'll reconnect you.",
    ),
    (
        r"change anything else",
        lambda s: "No: your medicines and appointments stay as they are; only this detail changed.",
    ),
    (r"pick it up", pickup),
    (r"\bsaved\b", lambda s: "Yes, it's saved on your record now; nothing else is needed."),
    (r"how long will i have to wait", queue_wait),
    (r"tell them", what_to_tell),
    (
        r"take anything",
        lambda s: (
            "Don't take anything new unless the 911 dispatcher or a clinician tells you "
            "to; keep the usual medicines nearby to show the paramedics."
        ),
    ),
    (
        r"while i wait",
        lambda s: (
            "Stay with someone you trust if you can, and keep away from anything you "
            "could use to hurt yourself. If you might act on these thoughts, call 911; you can "
            "call or text 988 at any time."
        ),
    ),
)
