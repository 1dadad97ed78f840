"""Existing data goes into a `default` project; the global groups become memberships of it.

Before projects every active account could read and act on every thread, so each becomes an
editor of `default` unless a group or a permission gave it more (or less): Viewers -> viewer,
Moderators (or the `moderate` permission) -> moderator, Admins (or `redact`) -> admin.
Superusers need no membership. Runs started from the browser (our generators) are `web` runs.
"""

from django.db import migrations

GROUP_ROLES = {"Viewers": "viewer", "Moderators": "moderator", "Admins": "admin"}
RANK = {"viewer": 1, "editor": 2, "moderator": 3, "admin": 4}
WEB_GENERATORS = ("demo", "openai", "external", "user")


def forward(apps, schema_editor):
    Project = apps.get_model("transcripts", "Project")
    default, _ = Project.objects.get_or_create(slug="default", defaults={"name": "Default"})
    for name in ("Thread", "ApiToken", "ImportJob"):
        model = apps.get_model("transcripts", name)
        model.objects.filter(project__isnull=True).update(project=default)
    AuditRecord = apps.get_model("transcripts", "AuditRecord")
    AuditRecord.objects.exclude(thread_id="").update(project=default)
    Run = apps.get_model("transcripts", "Run")
    Run.objects.filter(generator__in=WEB_GENERATORS).update(origin="web")
    Run.objects.filter(generator="import").update(origin="import")

    User = apps.get_model("auth", "User")
    Membership = apps.get_model("transcripts", "Membership")
    for user in User.objects.filter(is_active=True, is_superuser=False).prefetch_related(
        "groups", "user_permissions"
    ):
        roles = [GROUP_ROLES[g.name] for g in user.groups.all() if g.name in GROUP_ROLES]
        codenames = {p.codename for p in user.user_permissions.all()}
        if "redact" in codenames:
            roles.append("admin")
        if "moderate" in codenames:
            roles.append("moderator")
        role = max(roles, key=RANK.__getitem__) if roles else "editor"
        Membership.objects.get_or_create(project=default, user=user, defaults={"role": role})
    apps.get_model("auth", "Group").objects.filter(name__in=GROUP_ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [("transcripts", "0005_projects")]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
