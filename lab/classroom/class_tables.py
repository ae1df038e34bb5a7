"""The class database's tables (SQLAlchemy Core): their names and columns are the stored schema, so a database made
by an older Layer Lab opens unchanged. lab/classroom/class_engine.py creates them; the Workshop's parts
(lab/classroom/workshop_db.py) read and write them.
"""

from __future__ import annotations

import sqlalchemy as sa

VIEW_QUERY_CHARS = 2000  # the longest student link (query string) a class's current view keeps

meta = sa.MetaData()
# The tables have names of their own, so tables of a schema without lecturer keys in the same database are left
# untouched and never read.
classes = sa.Table(
    "class_terms", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("term", sa.Integer, nullable=False),  # how many times the code was opened
    sa.Column("opened", sa.Float, nullable=False),
    sa.Column("closed", sa.Float, nullable=True),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Index("class_terms_opened", "opened"),  # retention finds old classes without reading every class
)
predictions = sa.Table(
    "class_predictions", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("voter", sa.String(64), primary_key=True),
    sa.Column("client", sa.String(64), nullable=False),
    sa.Column("option", sa.Integer, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
votes = sa.Table(  # every vote cast (replacements included), for the flood bounds; older rows are pruned
    "class_votes", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("code", sa.String(24), nullable=False),
    sa.Column("voter", sa.String(64), nullable=False),
    sa.Column("client", sa.String(64), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("class_votes_voter_at", "voter", "at"),
    sa.Index("class_votes_code_client_at", "code", "client", "at"),
)
joined = sa.Table(  # the voter identities the server issued for a class (`join`): only these vote
    "class_voters", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("voter", sa.String(64), primary_key=True),
    sa.Column("at", sa.Float, nullable=False),
)
join_buckets = sa.Table(  # per class and address: the join token bucket's level at `at`
    "class_joins", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("client", sa.String(64), primary_key=True),
    sa.Column("tokens", sa.Float, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
failures = sa.Table(  # wrong class codes and lecturer keys per address (`find`, `check_key`), pruned after WINDOW
    "class_failures", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("client", sa.String(64), nullable=False),
    sa.Column("kind", sa.String(8), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("class_failures_client_kind_at", "client", "kind", "at"),
)
class_starts = sa.Table(  # who started a class when: the per-address bound on starting (pruned after START_WINDOW)
    "class_starts", meta,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("client", sa.String(64), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Index("class_starts_client_at", "client", "at"),
)
windows = sa.Table(  # the voting window of a question of a class; no row = waiting
    "class_windows", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("state", sa.String(8), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
views = sa.Table(  # the view a class's lecturer presents now: where "Join a class" takes a student
    "class_views", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("page", sa.String(64), nullable=False),
    sa.Column("query", sa.String(VIEW_QUERY_CHARS), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
lessons = sa.Table(  # the lesson a class follows (its JSON, lab/classroom/lessons.py) and the step the room is on
    "class_lessons", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("lesson", sa.Text, nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
outcomes = sa.Table(  # what the lecturer's run said about a question (lessons.outcome's JSON): the lesson's report
    "class_outcomes", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("outcome", sa.Text, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
figures = sa.Table(  # the figure the lecturer's page drew for a question (Plotly JSON): the light student view's
    "class_figures", meta,
    sa.Column("code", sa.String(24), primary_key=True),
    sa.Column("question", sa.String(64), primary_key=True),
    sa.Column("figure", sa.Text, nullable=False),
    sa.Column("at", sa.Float, nullable=False),
)
tickets = sa.Table(  # lecturer tickets (`lecturer_ticket`): a ticket's SHA-256 only, deleted when redeemed or expired
    "class_tickets", meta,
    sa.Column("ticket_hash", sa.String(64), primary_key=True),
    sa.Column("code", sa.String(24), nullable=False),
    sa.Column("expires", sa.Float, nullable=False),
)
LESSON_CHARS = 32_000  # a lesson's JSON (lab/classroom/lessons.py: MAX_BYTES)
OUTCOME_CHARS = 4_000  # an outcome's JSON: a claim's statement, numbers and error
OLD_SECRETS = "lab_secrets"  # where the signing secret used to be kept: dropped (lab/runtime/secret.py)
