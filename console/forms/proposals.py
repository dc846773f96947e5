"""The reviewer's form: agreeing or disagreeing with a validation's verdict, with a note. (The
proposal filters are shared with the API: `beliefs.schemas.ProposalFilterForm`.)"""

from __future__ import annotations

from django import forms

from beliefs.domain.vocabulary import MAX_TEXT_LENGTH
from beliefs.models import ProposalAnnotation


class AnnotationForm(forms.Form):
    agreement = forms.ChoiceField(
        label="Do you agree with the verdict?",
        choices=ProposalAnnotation.Agreement.choices,
        widget=forms.RadioSelect,
        error_messages={
            "required": "Choose agree or disagree.",
            "invalid_choice": "Choose agree or disagree.",
        },
    )
    note = forms.CharField(
        label="Note",
        required=False,
        max_length=MAX_TEXT_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Why you agree or disagree (optional).",
    )
