from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from accounts import views as account_views
from accounts import views_tokens
from portal import views as portal_views

urlpatterns = [
    path("", portal_views.home, name="home"),
    path("accounts/login/", account_views.LoginPage.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/people/", account_views.people, name="people"),
    path("accounts/display/", account_views.display_preferences, name="display_preferences"),
    path("accounts/session/", account_views.session_keepalive, name="session_keepalive"),
    path("accounts/people/new/", account_views.person_new, name="person_new"),
    path("accounts/people/<int:pk>/", account_views.person_edit, name="person_edit"),
    path(
        "accounts/notifications/",
        account_views.notification_settings,
        name="notification_settings",
    ),
    path("accounts/tokens/", views_tokens.api_tokens, name="api_tokens"),
    path(
        "accounts/tokens/<int:pk>/revoke/", views_tokens.api_token_revoke, name="api_token_revoke"
    ),
    path("benchmark/", include("benchmark.urls")),
    path("fidelity/", include("fidelity.urls")),
    path("jury/", include("jury.urls")),
    path("annotation/", include("annotation.urls")),
    path("lab/", include("rubric_lab.urls")),
    path("alignment/", include("alignment.urls")),
    path("webhooks/", include("webhooks.urls")),
    path("api/v1/", include("api.urls")),
    path("admin/", admin.site.urls),
]

# A query parameter that cannot be used (common.query.BadQuery) says why on the site's page.
handler400 = "common.query.bad_request"
