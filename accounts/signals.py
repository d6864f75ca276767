"""What accounts tell the apps above them. Accounts sit below every app that records work, so
they announce a change and those apps act on it (annotation gives back the seats the person
held), instead of importing them."""

from django.dispatch import Signal

# Sent inside the transaction that deactivates an account: person (the User), actor (who did
# it, or None).
account_deactivated = Signal()

# Sent after a sign-on whose claim names projects: person (the User), projects (names). The
# annotation app enrols the person in those that exist (enrolment only adds: a project missing
# from the claim later is left to the People and project pages, where seats are given back).
projects_claimed = Signal()
