"""ORM models of the run store; timestamps are stored as naive UTC and read back aware (``UTCDateTime``).
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Boolean, DateTime, Enum, Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator


class RunStatus(enum.StrEnum):
    """Life-cycle state of a run: ``running`` until its process finishes it, or ``lost`` when the
    process died without saying so (judged by ``decisions.store.liveness``)."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    LOST = "lost"


class UTCDateTime(TypeDecorator[datetime]):
    """A datetime column stored as naive UTC (naive input is taken as UTC), read back as aware UTC."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """An aware datetime as naive UTC, for storing."""
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """A stored datetime as aware UTC."""
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utc_now() -> datetime:
    """Return the current time as an aware UTC datetime."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base of the run-store models."""


class Run(Base):
    """One execution of a job: its configuration, provenance, timings and outcome."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_kind_created", "kind", "created_at"),
        Index("ix_runs_status_created", "status", "created_at"),
        {"sqlite_autoincrement": True},  # an id is never handed out again, even after its run is deleted
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # What was run, e.g. "gas_storage".
    kind: Mapped[str] = mapped_column(String(64))
    # Human-readable label of the run.
    name: Mapped[str] = mapped_column(String(255))
    status: Mapped[RunStatus] = mapped_column(
        Enum(
            RunStatus,
            name="run_status",
            native_enum=False,
            length=16,
            values_callable=lambda members: [m.value for m in members],
            validate_strings=True,
        ),
        default=RunStatus.RUNNING,
    )
    # The job's configuration as plain JSON.
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    package_version: Mapped[str] = mapped_column(String(64))
    # HEAD commit of the source tree, when it is a git checkout.
    git_commit: Mapped[str | None] = mapped_column(String(64), default=None)
    host: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    duration_seconds: Mapped[float | None] = mapped_column(Float, default=None)
    error: Mapped[str | None] = mapped_column(Text, default=None)
    # Shared label of the runs that belong to one sweep.
    sweep_id: Mapped[str | None] = mapped_column(String(64), index=True, default=None)
    # Process id of the recording process on ``host`` (None for runs recorded before it was kept).
    pid: Mapped[int | None] = mapped_column(Integer, default=None)
    # Last sign of life of a running run, renewed by its heartbeat thread.
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)
    # Who started it: the app's user or the CLI's OS user (None for runs recorded before it was kept).
    started_by: Mapped[str | None] = mapped_column(String(255), default=None)

    metrics: Mapped[list[Metric]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Metric.id",
    )
    artifacts: Mapped[list[Artifact]] = relationship(
        back_populates="run",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="Artifact.id",
    )

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, kind={self.kind!r}, name={self.name!r}, status={self.status!r})"


class _OfRun:
    """The leading columns of a row that belongs to a run: its own id, the run's and its name."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True, sort_order=-1)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True, sort_order=-1)
    name: Mapped[str] = mapped_column(String(255), sort_order=-1)


class Metric(_OfRun, Base):
    """A named scalar of a run, optionally at a step (iteration, epoch)."""

    __tablename__ = "metrics"

    # The value; NULL when the logged value was nan or infinite.
    value: Mapped[float | None] = mapped_column(Float)
    step: Mapped[int | None] = mapped_column(Integer, default=None)

    run: Mapped[Run] = relationship(back_populates="metrics")

    def __repr__(self) -> str:
        return f"Metric(run_id={self.run_id!r}, name={self.name!r}, value={self.value!r}, step={self.step!r})"


class Artifact(_OfRun, Base):
    """A file produced by a run, recorded by path and URL (the store does not hold the bytes)."""

    __tablename__ = "artifacts"

    # Where the recording process wrote the file (a local path).
    path: Mapped[str] = mapped_column(Text)
    media_type: Mapped[str | None] = mapped_column(String(255), default=None)
    # Where the file lives, as an fsspec URL; None for rows recorded before revision 0002.
    url: Mapped[str | None] = mapped_column(Text, default=None)

    run: Mapped[Run] = relationship(back_populates="artifacts")

    def __repr__(self) -> str:
        return f"Artifact(run_id={self.run_id!r}, name={self.name!r}, path={self.path!r})"


class Deployment(Base):
    """An operating policy chosen from a run's results: for a whole ``kind`` (no asset; the newest such row of
    a kind is deployed) or for one asset (the asset's newest row is deployed for it)."""

    __tablename__ = "deployments"
    __table_args__ = (Index("ix_deployments_kind_chosen_at", "kind", "chosen_at"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # The run whose result holds the chosen policy.
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    # The domain, e.g. "utility".
    kind: Mapped[str] = mapped_column(String(64))
    # What was chosen, in words (e.g. "learnt, linear, lambda 0.3").
    label: Mapped[str] = mapped_column(String(255))
    # What identifies the policy within the run (method, scalarisation, lambda...) and its figures.
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # Why, in the chooser's words.
    note: Mapped[str | None] = mapped_column(Text, default=None)
    chosen_by: Mapped[str | None] = mapped_column(String(255), default=None)
    chosen_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    # The asset it is deployed for (None: a choice for the whole ``kind``, as before revision 0005).
    asset_id: Mapped[int | None] = mapped_column(
        ForeignKey("assets.id", name="fk_deployments_asset_id_assets"), index=True, default=None
    )
    # sha256 (hex) of the deployed policy, and the study's figures when it was deployed.
    policy_digest: Mapped[str | None] = mapped_column(String(64), default=None)
    figures: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    # The asset's deployment this one replaced (None: its first); not a foreign key, so history outlives deletions.
    replaces_id: Mapped[int | None] = mapped_column(Integer, default=None)

    def __repr__(self) -> str:
        return f"Deployment(id={self.id!r}, kind={self.kind!r}, run_id={self.run_id!r}, label={self.label!r})"


class Forgetting(Base):
    """One patient forgotten from a run's learnt policy: the data's and the policy's digests, whether
    unlearning equalled retraining without them, both times, who asked and when."""

    __tablename__ = "forgettings"
    __table_args__ = ({"sqlite_autoincrement": True},)  # an id is never handed out again

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # The run whose learnt policy forgot the patient.
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    # The patient's identifier in the run's logs (e.g. "t2d-17").
    patient: Mapped[str] = mapped_column(String(255))
    # The part of the run the patient belongs to (chronic care: the disease).
    disease: Mapped[str] = mapped_column(String(64))
    # sha256 (hex) of the learner's data before and after the forgetting, and of its policy after.
    data_digest_before: Mapped[str] = mapped_column(String(64))
    data_digest_after: Mapped[str] = mapped_column(String(64))
    policy_digest_after: Mapped[str] = mapped_column(String(64))
    # Whether unlearning equalled retraining without the patient, bit for bit.
    equal: Mapped[bool] = mapped_column(Boolean)
    unlearn_seconds: Mapped[float] = mapped_column(Float)
    retrain_seconds: Mapped[float] = mapped_column(Float)
    created_by: Mapped[str | None] = mapped_column(String(255), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)

    def __repr__(self) -> str:
        return f"Forgetting(id={self.id!r}, run_id={self.run_id!r}, patient={self.patient!r})"


class Asset(Base):
    """A named thing an operator decides for: of one domain (``kind``), with its own scenario settings."""

    __tablename__ = "assets"
    __table_args__ = ({"sqlite_autoincrement": True},)  # an id is never handed out again

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    # The domain, e.g. "gas_storage".
    kind: Mapped[str] = mapped_column(String(64))
    # The asset's scenario as plain JSON.
    settings: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    note: Mapped[str | None] = mapped_column(Text, default=None)
    created_by: Mapped[str | None] = mapped_column(String(255), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)
    # When it stopped being operated (None: in operation).
    retired_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), default=None)

    def __repr__(self) -> str:
        return f"Asset(id={self.id!r}, name={self.name!r}, kind={self.kind!r})"


class DecisionRow(Base):
    """One decision taken for an asset: the state seen, the action taken, what it was expected to be worth."""

    __tablename__ = "decisions"
    __table_args__ = (Index("ix_decisions_asset_decided", "asset_id", "decided_at"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    asset_id: Mapped[int] = mapped_column(ForeignKey("assets.id", name="fk_decisions_asset_id_assets"))
    # The deployment whose policy decided (None once that deployment's run was deleted).
    deployment_id: Mapped[int | None] = mapped_column(
        ForeignKey("deployments.id", name="fk_decisions_deployment_id_deployments", ondelete="SET NULL"),
        index=True, default=None,
    )
    policy_digest: Mapped[str | None] = mapped_column(String(64), default=None)
    state: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    action: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The value the policy expected of the action (None: not given, or not finite), and its interval.
    expected_value: Mapped[float | None] = mapped_column(Float, default=None)
    interval_low: Mapped[float | None] = mapped_column(Float, default=None)
    interval_high: Mapped[float | None] = mapped_column(Float, default=None)
    # The alternative policy's action and value, reasons, sensitivities.
    details: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    decided_by: Mapped[str | None] = mapped_column(String(255), default=None)
    decided_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)

    def __repr__(self) -> str:
        return f"DecisionRow(id={self.id!r}, asset_id={self.asset_id!r}, deployment_id={self.deployment_id!r})"


class Outcome(Base):
    """What was observed after a decision; a decision may have several (corrections): the newest counts."""

    __tablename__ = "outcomes"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    decision_id: Mapped[int] = mapped_column(
        ForeignKey("decisions.id", name="fk_outcomes_decision_id_decisions", ondelete="CASCADE"), index=True
    )
    # The domain's observed fields.
    realised: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # The quantity compared with the decision's expected value (None: not finite).
    realised_value: Mapped[float | None] = mapped_column(Float, default=None)
    note: Mapped[str | None] = mapped_column(Text, default=None)
    recorded_by: Mapped[str | None] = mapped_column(String(255), default=None)
    recorded_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)

    def __repr__(self) -> str:
        return f"Outcome(id={self.id!r}, decision_id={self.decision_id!r}, realised_value={self.realised_value!r})"


class User(Base):
    """A named person of the platform with a role; only a hash of the password is kept."""

    __tablename__ = "users"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    # An argon2id hash in PHC string form (the salt and the parameters inside it).
    password_hash: Mapped[str] = mapped_column(String(255))
    # "viewer", "operator" or "approver".
    role: Mapped[str] = mapped_column(String(16))
    created_by: Mapped[str | None] = mapped_column(String(255), default=None)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utc_now)

    def __repr__(self) -> str:
        return f"User(id={self.id!r}, name={self.name!r}, role={self.role!r})"
