from decimal import Decimal

from django import forms

OFFLINE_REVIEWER = "offline/reviewer"


class ReviewForm(forms.Form):
    reviewer_model = forms.CharField(
        max_length=200,
        initial=OFFLINE_REVIEWER,
        help_text="Any model string (openai/..., anthropic/..., a named endpoint); "
        f"{OFFLINE_REVIEWER} is the scripted reviewer, for the demo and tests.",
    )
    use_cache = forms.BooleanField(
        required=False, initial=True, label="Use the response cache (identical calls cost nothing)"
    )
    cost_limit_usd = forms.DecimalField(
        required=False, min_value=Decimal("0.01"), decimal_places=2, label="Cost limit (USD)"
    )
