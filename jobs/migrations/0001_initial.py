"""WorkerHeartbeat moves here from the benchmark app: state only, the table keeps its name."""

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('benchmark', '0010_security_model_call_answer_key'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table stays where it is, under its old name: only Django's idea of which
            # app owns the model changes, so existing databases keep their rows.
            state_operations=[
                migrations.CreateModel(
                    name='WorkerHeartbeat',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('hostname', models.CharField(max_length=255)),
                        ('pid', models.PositiveIntegerField()),
                        ('process_started_at', models.DateTimeField()),
                        ('mode', models.CharField(max_length=20)),
                        ('serving', models.CharField(blank=True, max_length=100)),
                        ('concurrency', models.PositiveSmallIntegerField(blank=True, null=True)),
                        ('started_at', models.DateTimeField(auto_now_add=True)),
                        ('last_seen_at', models.DateTimeField(db_index=True)),
                        ('stopped_at', models.DateTimeField(blank=True, null=True)),
                    ],
                    options={
                        'db_table': 'benchmark_workerheartbeat',
                        'ordering': ['-last_seen_at'],
                        'constraints': [models.UniqueConstraint(fields=('hostname', 'pid', 'process_started_at'), name='unique_worker_process')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
