"""Live lists: a project's channel is told when one of its threads is created and when a run of
one of its threads begins or changes status (`transcripts.ledger.notify.project_channel`).

Triggers, so that every way in (the API, OTLP, the chat backend, imports, the workers) is
covered by one definition; a status change is told once, not on every append."""

from django.db import migrations

FUNCTIONS = """
CREATE FUNCTION transcripts_live_thread() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('transcripts_project_' || NEW.project_id,
    json_build_object('kind', 'thread', 'thread', NEW.id, 'hidden', NEW.hidden)::text);
  RETURN NULL;
END $$;
CREATE FUNCTION transcripts_live_run() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  owner RECORD;
BEGIN
  SELECT project_id, hidden INTO owner FROM transcripts_thread WHERE id = NEW.thread_id;
  IF FOUND THEN
    PERFORM pg_notify('transcripts_project_' || owner.project_id,
      json_build_object('kind', 'run', 'thread', NEW.thread_id, 'run', NEW.id,
                        'status', NEW.status, 'hidden', owner.hidden)::text);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER transcripts_thread_live AFTER INSERT ON transcripts_thread
  FOR EACH ROW EXECUTE FUNCTION transcripts_live_thread();
CREATE TRIGGER transcripts_run_live_begun AFTER INSERT ON transcripts_run
  FOR EACH ROW EXECUTE FUNCTION transcripts_live_run();
CREATE TRIGGER transcripts_run_live_status AFTER UPDATE OF status ON transcripts_run
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
  EXECUTE FUNCTION transcripts_live_run();
"""

DROP = """
DROP TRIGGER IF EXISTS transcripts_run_live_status ON transcripts_run;
DROP TRIGGER IF EXISTS transcripts_run_live_begun ON transcripts_run;
DROP TRIGGER IF EXISTS transcripts_thread_live ON transcripts_thread;
DROP FUNCTION IF EXISTS transcripts_live_run();
DROP FUNCTION IF EXISTS transcripts_live_thread();
"""


class Migration(migrations.Migration):
    dependencies = [
        ("transcripts", "0017_organise"),
    ]

    operations = [migrations.RunSQL(FUNCTIONS, DROP)]
