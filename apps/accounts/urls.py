from django.contrib.auth import views as auth_views
from django.urls import path

from apps.accounts import sso, views

app_name = "accounts"

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("sso/login/", sso.sso_login, name="sso-login"),
    path("sso/callback/", sso.sso_callback, name="sso-callback"),
    path("profile/", views.profile, name="profile"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke, name="token-revoke"),
    path("team/switch/", views.team_switch, name="team-switch"),
    path("team/members/", views.members, name="members"),
    path("team/members/<int:membership_id>/role/", views.member_role, name="member-role"),
    path("team/members/<int:membership_id>/remove/", views.member_remove, name="member-remove"),
    path(
        "team/invitations/<int:invitation_id>/withdraw/",
        views.invitation_withdraw,
        name="invitation-withdraw",
    ),
    path("invitations/<str:token>/", views.invitation, name="invitation"),
]
