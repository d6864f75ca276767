from allauth.account import views as allauth_views
from allauth.socialaccount import views as social_views
from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.urls import include, path
from django.views.generic import RedirectView

from accounts import views as account_views
from accounts import views_tokens
from portal import views as portal_views

urlpatterns = [
    path("", portal_views.home, name="home"),
    path("accounts/login/", account_views.LoginPage.as_view(), name="login"),
    path("accounts/logout/", account_views.LogoutPage.as_view(), name="logout"),
    # The same two pages under the names allauth's templates and login stages reverse.
    path("accounts/login/", account_views.LoginPage.as_view(), name="account_login"),
    path("accounts/logout/", account_views.LogoutPage.as_view(), name="account_logout"),
    # Sign-on (allauth's OpenID Connect client: /accounts/oidc/<provider>/login/ and its
    # callback), its error pages, and two factors (/accounts/2fa/). Only these parts of allauth:
    # no sign-up, e-mail or password pages of its own.
    path("accounts/", include("allauth.socialaccount.providers.openid_connect.urls")),
    path(
        "accounts/3rdparty/login/error/", social_views.login_error, name="socialaccount_login_error"
    ),
    path(
        "accounts/3rdparty/login/cancelled/",
        social_views.login_cancelled,
        name="socialaccount_login_cancelled",
    ),
    path("accounts/2fa/", include("allauth.mfa.urls")),
    path("accounts/reauthenticate/", allauth_views.reauthenticate, name="account_reauthenticate"),
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
    # The admin site's own login form would skip the second factor and the password rules per
    # role: it sends people to the site's login page, which comes back.
    path(
        "admin/login/",
        login_not_required(RedirectView.as_view(pattern_name="login", query_string=True)),
    ),
    path("admin/", admin.site.urls),
]

# A query parameter that cannot be used (common.query.BadQuery) says why on the site's page.
handler400 = "common.query.bad_request"
