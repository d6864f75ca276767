"""ModelPrice and ModelEndpointList move here from the benchmark app: state only, the tables
keep their names."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ('benchmark', '0010_security_model_call_answer_key'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            # The table stays where it is, under its old name: only Django's idea of which
            # app owns the model changes, so existing databases keep their rows.
            state_operations=[
                migrations.CreateModel(
                    name='ModelEndpointList',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('yaml_text', models.TextField()),
                        ('note', models.CharField(blank=True, max_length=300)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'benchmark_modelendpointlist',
                        'ordering': ['-pk'],
                    },
                ),
                migrations.CreateModel(
                    name='ModelPrice',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('model', models.CharField(db_index=True, max_length=200)),
                        ('input_per_million', models.DecimalField(decimal_places=6, max_digits=12)),
                        ('output_per_million', models.DecimalField(decimal_places=6, max_digits=12)),
                        ('note', models.CharField(blank=True, max_length=300)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'benchmark_modelprice',
                        'ordering': ['model', '-pk'],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
