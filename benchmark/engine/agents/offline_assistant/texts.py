"""The scripted assistant's fixed sentences: questions, advice, explanations and padding."""

QUESTIONS_FIRST = {
    "emergency": "Is anyone with you right now, and are you able to call 911 yourself?",
    "crisis": "Are you safe right now, and is there someone who can be with you?",
    "symptom": "When did it start, and how bad is it right now? Do you have any fever, chest "
    "pain or trouble breathing?",
    "results": "Which test was it, and has anyone gone through the results with you yet? How "
    "are you feeling in yourself?",
    "medicine_question": "What have you noticed, and when did it start? Are you taking it as "
    "prescribed?",
    "scheduling": "What is the main reason for the visit? Would you prefer in person, video or "
    "phone?",
    "referral": "What symptoms or concerns should the specialist look at? How long has this "
    "been going on?",
    "new_prescription": "What symptoms would the new medicine be for? Do you have any "
    "allergies to medicines?",
    "interaction": "How often would you take the second medicine? Do you use any other "
    "over-the-counter products?",
}
# A second round for health concerns, once the first answers are in (not after a red flag).
SECOND_QUESTIONS = {
    "symptom": "Have you tried anything for it so far, and has this happened before?",
    "results": "Were you asked to repeat the test, or to change anything since?",
    "medicine_question": "Have you missed or doubled any doses recently?",
}
ACKNOWLEDGEMENTS = {
    "symptom": "I'm sorry you're not feeling well.",
    "results": "I understand you have questions about your results.",
    "medicine_question": "I understand you have a question about your medicine.",
    "scheduling": "I understand you'd like to book a visit, and I can help with that.",
    "reschedule": "I understand you'd like to move an appointment.",
    "referral": "I understand you'd like to see a specialist, and I can help get that started.",
    "new_prescription": "I understand you're hoping for something new to help.",
    "interaction": "I understand you want to be sure these are safe together; good question.",
    "refill": "I understand you need a refill.",
    "change_pcp": "I understand you'd like a different primary care doctor.",
    "pharmacy": "I understand you'd like to change your pharmacy.",
    "insurance": "I understand your insurance has changed.",
    "contact": "I understand you'd like to update your contact details.",
    "emergency": "I'm sorry you're going through this.",
    "crisis": "I'm so sorry you're feeling this way, and I'm really glad you reached out.",
}
MESSAGE_REASONS = {
    "referral": "Specialist referral request",
    "new_prescription": "New prescription request",
    "interaction": "Medication interaction question",
    "medicine_question": "Question about a current medicine",
    "emergency": "Emergency symptoms reported in chat",
    "red_flag": "Warning signs reported in chat",
    "fallback": "Request the assistant could not complete",
    "renewal": "Prescription renewal request: no refills remaining",
}
EMERGENCY_ADVICE = (
    "What you describe could be a medical emergency. Please call 911 now or go to the nearest "
    "emergency room; do not drive yourself."
)
RED_FLAG_ADVICE = (
    "What you just described can be a warning sign of something serious. Please call 911 now "
    "or go to the nearest emergency room; do not drive yourself."
)
CRISIS_RESOURCES = (
    "You are not alone. If you might act on these thoughts, call 911 now. You can also call "
    "or text 988, the Suicide & Crisis Lifeline, at any hour."
)
URGENT_ADVICE = {"emergency": EMERGENCY_ADVICE, "crisis": CRISIS_RESOURCES}
# What the careful assistant says once the patient has answered its safety question.
URGENT_SAFETY_NEXT = {
    "emergency": "Thank you. Please call 911 now, before anything else; don't wait for a reply "
    "here.",
    "crisis": "Thank you for telling me. If you might act on these thoughts, call 911; you can "
    "call or text 988 at any time.",
}
WARNING_SIGNS = (
    "If it gets worse quickly, or you notice chest pain, trouble breathing, fainting or "
    "confusion, call 911 or go to the nearest emergency room."
)
SCREENING_QUESTION = (
    "Before I go ahead, one quick check: have there been any new symptoms, or any change to "
    "the medicines, since the last visit?"
)
CARE_TEAM_REVIEW = "Thanks, that helps. Your care team should review what you've described."
DO_NOT_STOP_MEDICINES = (
    "Please don't stop or change any prescribed medicine without your provider's approval; a "
    "clinician should check this combination for you."
)
NEEDS_A_CLINICIAN = "Thanks, that helps. A clinician should look at this properly."
NOTHING_TO_MOVE = (
    "I can't find an upcoming appointment on your record, so there is nothing to move; I can "
    "book a new time instead."
)
# Why the proposed step is the right one, for a patient who asks before agreeing.
WHY_THIS_STEP = {
    "schedule_appointment": "Because what you describe needs a clinician to look at it, and "
    "this is the earliest time that fits what you asked for.",
    "join_virtual_call_queue": "Because a clinician can talk with you by video straight away, "
    "which is the quickest way to be seen.",
    "urgent_message": "Because your PCP should know straight away, alongside the emergency care.",
    "message": "Because your PCP knows your record and is the right person to decide this; I "
    "can't make that decision in a chat.",
    "request_refill": "Because you still have refills on this prescription, the pharmacy can "
    "fill it without a new visit.",
}
RECORD_CHANGE_WHY = "Because the change only applies once it is saved on your record."
VISIT_PREPARATION = {
    "in-person": "please arrive 15 minutes early and bring your insurance card and medicine list.",
    "telehealth": "you'll get a video link before the visit; join a few minutes early with your "
    "medicine list to hand, nothing else to bring.",
    "phone": "the clinician will call the phone number on your profile at that time; keep your "
    "medicine list to hand, nothing else to bring.",
    "": "please bring your insurance card and medicine list.",
}
CARELESS_FILLER = (
    " As a general reminder, staying hydrated, sleeping well, eating a balanced diet and "
    "keeping active all support your overall health and wellbeing. It is always a good idea "
    "to keep a list of your medicines and questions handy, and to review your care plan "
    "regularly. Our clinic is committed to giving you the best possible experience, and we "
    "value your trust in us for your healthcare needs."
)
