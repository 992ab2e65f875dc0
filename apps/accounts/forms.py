from django import forms

from apps.accounts.choices import Role


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=80, initial="API token", help_text="What the token is for.")


class MembershipForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ENGINEER)


class TeamSwitchForm(forms.Form):
    team_id = forms.IntegerField()
