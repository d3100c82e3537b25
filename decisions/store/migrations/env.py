"""Alembic environment of the run store: migrations run in the transaction of the connection
``decisions.store.migrations`` hands in (``config.attributes["connection"]``), else on
``sqlalchemy.url`` (or offline, ``--sql``).
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine
from sqlalchemy.pool import NullPool

from decisions.store.models import Base

config = context.config
target_metadata = Base.metadata


def run_offline() -> None:
    """Emit the migrations' SQL for ``sqlalchemy.url`` instead of running them."""
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    """Run the migrations on the handed-in connection, or on a new one to ``sqlalchemy.url``."""
    connection = config.attributes.get("connection")
    if connection is not None:
        context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url") or "", poolclass=NullPool)
    try:
        with engine.connect() as own:
            context.configure(connection=own, target_metadata=target_metadata, render_as_batch=True)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
