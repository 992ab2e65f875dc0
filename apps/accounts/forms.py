from django import forms
from django.contrib.auth.forms import UserCreationForm

from apps.accounts.choices import Role


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=80, initial="API token", help_text="What the token is for.")


class InvitationForm(forms.Form):
    invitee = forms.CharField(
        label="E-mail address or username",
        max_length=254,
        help_text="An e-mail address lets a new person make an account; a username invites an "
        "existing account, which accepts after signing in.",
    )
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ENGINEER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class SignUpForm(UserCreationForm):
    """Username and password twice, checked by the project's password validators; the e-mail
    address comes from the invitation, so the similarity check sees it too."""

    def __init__(self, *args, email: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.instance.email = email


class TeamSwitchForm(forms.Form):
    team_id = forms.IntegerField()
