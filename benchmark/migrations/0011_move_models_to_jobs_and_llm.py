"""WorkerHeartbeat moved to the jobs app, ModelPrice and ModelEndpointList to the llm app: state
only, their tables stay as they are (jobs and llm 0001 take them over)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('benchmark', '0010_security_model_call_answer_key'),
        ('jobs', '0001_initial'),
        ('llm', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table stays where it is, under its old name: only Django's idea of which
            # app owns the model changes, so existing databases keep their rows.
            state_operations=[
                migrations.RemoveField(
                    model_name='modelendpointlist',
                    name='created_by',
                ),
                migrations.RemoveField(
                    model_name='modelprice',
                    name='created_by',
                ),
                migrations.DeleteModel(
                    name='WorkerHeartbeat',
                ),
                migrations.DeleteModel(
                    name='ModelEndpointList',
                ),
                migrations.DeleteModel(
                    name='ModelPrice',
                ),
            ],
            database_operations=[],
        ),
    ]
