"""Numbered schema migrations. Append new ones; never edit one that has shipped.

Each migration is a list of SQL statements applied in one transaction together with its row in
``schema_version``. JSON columns hold text produced by ``json.dumps``. Migrations run before foreign keys are
turned on, so a table can be rebuilt (SQLite's way to change a CHECK constraint) without cascading deletes.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "initial schema",
        [
            # ---------------------------------------------------------------- seeds
            """
            CREATE TABLE seeds (
                id TEXT PRIMARY KEY,
                title TEXT NOT NULL,
                modality TEXT NOT NULL,
                task_type TEXT NOT NULL,
                metric TEXT NOT NULL,
                lower_is_better INTEGER NOT NULL,
                id_column TEXT NOT NULL,
                target_columns TEXT NOT NULL,          -- JSON list
                columns TEXT NOT NULL,                 -- JSON list of {name, dtype, role, ...}
                train_size INTEGER NOT NULL,
                test_size INTEGER NOT NULL,
                origin TEXT,
                hints TEXT NOT NULL DEFAULT '{}',      -- JSON object
                tags TEXT NOT NULL DEFAULT '[]',       -- JSON list
                description TEXT NOT NULL,
                source_path TEXT,
                source_format TEXT NOT NULL DEFAULT 'sandmle',  -- sandmle | mlebench
                leaderboard TEXT,                      -- JSON list of scores (MLE-bench import)
                enabled INTEGER NOT NULL DEFAULT 1,
                content_hash TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )
            """,
            "CREATE INDEX idx_seeds_modality ON seeds(modality)",
            # ---------------------------------------------------------------- runs
            """
            CREATE TABLE runs (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('synthesis','sft','grpo','eval','bench','rollout')),
                name TEXT,
                status TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending','running','done','failed','stopped')),
                config TEXT NOT NULL DEFAULT '{}',     -- JSON
                summary TEXT NOT NULL DEFAULT '{}',    -- JSON: final figures
                parent_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
                pid INTEGER,
                host TEXT,
                dir TEXT,                              -- run folder under the data dir
                error TEXT,
                created_at TEXT NOT NULL,
                started_at TEXT,
                ended_at TEXT,
                heartbeat_at TEXT
            )
            """,
            "CREATE INDEX idx_runs_kind_created ON runs(kind, created_at)",
            "CREATE INDEX idx_runs_status ON runs(status)",
            """
            CREATE TABLE metrics (
                run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                step INTEGER NOT NULL,
                name TEXT NOT NULL,
                value REAL,
                ts TEXT NOT NULL,
                PRIMARY KEY (run_id, name, step)
            )
            """,
            """
            CREATE TABLE checkpoints (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                step INTEGER NOT NULL,
                path TEXT NOT NULL,
                sha256 TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT '{}',      -- JSON: optimizer/rng/curriculum state file names
                created_at TEXT NOT NULL,
                UNIQUE (run_id, step)
            )
            """,
            # ---------------------------------------------------------------- environments
            """
            CREATE TABLE environments (
                id TEXT PRIMARY KEY,
                seed_id TEXT REFERENCES seeds(id) ON DELETE SET NULL,
                run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
                title TEXT NOT NULL,
                status TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending','verified','rejected')),
                reason TEXT,                           -- why rejected
                split TEXT NOT NULL DEFAULT 'train',   -- train | heldout | imported
                modality TEXT NOT NULL,
                task_type TEXT NOT NULL,
                metric TEXT NOT NULL,
                lower_is_better INTEGER NOT NULL,
                id_column TEXT NOT NULL,
                target_columns TEXT NOT NULL,          -- JSON list
                n_train INTEGER,
                n_test INTEGER,
                backend TEXT,                          -- synthesis backend
                rng_seed INTEGER,
                blueprint TEXT NOT NULL DEFAULT '{}',  -- JSON
                scenario TEXT NOT NULL DEFAULT '{}',   -- JSON
                thresholds TEXT,                       -- JSON {gold, silver, bronze, median}
                verification TEXT NOT NULL DEFAULT '{}',  -- JSON report of every check
                dir TEXT,                              -- folder with public/ private/ generator.py
                fingerprint TEXT,                      -- for near-duplicate rejection
                created_at TEXT NOT NULL
            )
            """,
            "CREATE INDEX idx_envs_seed ON environments(seed_id, created_at)",
            "CREATE INDEX idx_envs_status ON environments(status, created_at)",
            "CREATE INDEX idx_envs_created ON environments(created_at)",
            """
            CREATE TABLE env_files (
                env_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                path TEXT NOT NULL,                    -- relative to the environment dir
                role TEXT NOT NULL CHECK (role IN ('public','private','generator','other')),
                sha256 TEXT NOT NULL,
                size INTEGER NOT NULL,
                PRIMARY KEY (env_id, path)
            )
            """,
            """
            CREATE TABLE leaderboard (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                env_id TEXT NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
                name TEXT NOT NULL,
                score REAL NOT NULL,
                rng_seed INTEGER,
                source TEXT NOT NULL DEFAULT 'reference',
                wall_s REAL,
                created_at TEXT NOT NULL
            )
            """,
            "CREATE INDEX idx_leaderboard_env ON leaderboard(env_id, score)",
            """
            CREATE TABLE synthesis_attempts (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
                seed_id TEXT,
                env_id TEXT,
                role TEXT NOT NULL,                    -- analyst | designer | engineer | grader | verifier | reviewer
                attempt INTEGER NOT NULL DEFAULT 1,
                backend TEXT,
                prompt TEXT,
                output TEXT,
                verdict TEXT NOT NULL,                 -- ok | retry | reject
                feedback TEXT,
                usage TEXT NOT NULL DEFAULT '{}',      -- JSON: tokens, cost
                wall_s REAL,
                created_at TEXT NOT NULL
            )
            """,
            "CREATE INDEX idx_attempts_env ON synthesis_attempts(env_id, id)",
            "CREATE INDEX idx_attempts_run ON synthesis_attempts(run_id, id)",
            # ---------------------------------------------------------------- sandbox
            """
            CREATE TABLE sandbox_runs (
                id TEXT PRIMARY KEY,
                env_id TEXT REFERENCES environments(id) ON DELETE SET NULL,
                run_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
                trajectory_id TEXT,
                backend TEXT NOT NULL,
                executor TEXT,
                command TEXT NOT NULL,
                status TEXT NOT NULL DEFAULT 'running',  -- running | ok | error | timeout | memory | killed | output_limit
                exit_code INTEGER,
                limits TEXT NOT NULL DEFAULT '{}',     -- JSON
                isolation TEXT NOT NULL DEFAULT '{}',  -- JSON: features active / missing
                warnings TEXT NOT NULL DEFAULT '[]',   -- JSON list
                wall_s REAL,
                cpu_s REAL,
                peak_rss_mb REAL,
                stdout_tail TEXT,
                stderr_tail TEXT,
                log_path TEXT,
                workdir TEXT,
                started_at TEXT NOT NULL,
                ended_at TEXT
            )
            """,
            "CREATE INDEX idx_sandbox_started ON sandbox_runs(started_at)",
            "CREATE INDEX idx_sandbox_status ON sandbox_runs(status, started_at)",
            "CREATE INDEX idx_sandbox_env ON sandbox_runs(env_id)",
            # ---------------------------------------------------------------- trajectories
            """
            CREATE TABLE trajectories (
                id TEXT PRIMARY KEY,
                run_id TEXT REFERENCES runs(id) ON DELETE CASCADE,
                env_id TEXT REFERENCES environments(id) ON DELETE SET NULL,
                policy TEXT NOT NULL,
                scaffold TEXT NOT NULL,
                group_id TEXT,
                step INTEGER,
                rng_seed INTEGER,
                status TEXT NOT NULL,                  -- done | error | timeout
                terminated INTEGER NOT NULL DEFAULT 0,
                truncated INTEGER NOT NULL DEFAULT 0,
                timed_out INTEGER NOT NULL DEFAULT 0,
                n_turns INTEGER NOT NULL DEFAULT 0,
                submission_path TEXT,
                grade TEXT,                            -- JSON grade report
                reward REAL,
                reward_breakdown TEXT NOT NULL DEFAULT '{}',  -- JSON
                wall_s REAL,
                tokens INTEGER,
                created_at TEXT NOT NULL
            )
            """,
            "CREATE INDEX idx_traj_run ON trajectories(run_id, step)",
            "CREATE INDEX idx_traj_env ON trajectories(env_id)",
            "CREATE INDEX idx_traj_group ON trajectories(group_id)",
            """
            CREATE TABLE turns (
                trajectory_id TEXT NOT NULL REFERENCES trajectories(id) ON DELETE CASCADE,
                idx INTEGER NOT NULL,
                role TEXT NOT NULL,                    -- system | user | assistant | tool
                text TEXT NOT NULL,
                tool TEXT,
                code TEXT,
                observation TEXT,
                well_formed INTEGER,
                wall_s REAL,
                token_ids TEXT,                        -- JSON list (hf policy)
                logprobs TEXT,                         -- JSON list (hf policy)
                PRIMARY KEY (trajectory_id, idx)
            )
            """,
            # ---------------------------------------------------------------- eval
            """
            CREATE TABLE eval_results (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
                env_id TEXT REFERENCES environments(id) ON DELETE SET NULL,
                trajectory_id TEXT,
                policy TEXT NOT NULL,
                scaffold TEXT NOT NULL,
                rng_seed INTEGER,
                score REAL,
                valid INTEGER NOT NULL,
                gold INTEGER NOT NULL DEFAULT 0,
                silver INTEGER NOT NULL DEFAULT 0,
                bronze INTEGER NOT NULL DEFAULT 0,
                above_median INTEGER NOT NULL DEFAULT 0,
                human_rank REAL,
                reward REAL,
                created_at TEXT NOT NULL
            )
            """,
            "CREATE INDEX idx_eval_run ON eval_results(run_id, env_id)",
        ],
    ),
    (
        2,
        "owners of running rows (pid + start time + host), dead runs, eval episodes that failed to run",
        [
            # runs: 'dead' = its process ended without closing it (killed); rebuilt to change the CHECK constraint
            """
            CREATE TABLE runs_new (
                id TEXT PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('synthesis','sft','grpo','eval','bench','rollout')),
                name TEXT,
                status TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending','running','done','failed','stopped','dead')),
                config TEXT NOT NULL DEFAULT '{}',
                summary TEXT NOT NULL DEFAULT '{}',
                parent_id TEXT REFERENCES runs(id) ON DELETE SET NULL,
                pid INTEGER,
                pid_start TEXT,                        -- the owner's start time (so a reused pid does not pass)
                host TEXT,
                dir TEXT,
                error TEXT,
                created_at TEXT NOT NULL,
                started_at TEXT,
                ended_at TEXT,
                heartbeat_at TEXT
            )
            """,
            "INSERT INTO runs_new (id, kind, name, status, config, summary, parent_id, pid, host, dir, error, created_at, "
            "started_at, ended_at, heartbeat_at) SELECT id, kind, name, status, config, summary, parent_id, pid, host, "
            "dir, error, created_at, started_at, ended_at, heartbeat_at FROM runs",
            "DROP TABLE runs",
            "ALTER TABLE runs_new RENAME TO runs",
            "CREATE INDEX idx_runs_kind_created ON runs(kind, created_at)",
            "CREATE INDEX idx_runs_status ON runs(status)",
            # sandbox runs: who runs them ('dead' when that process is gone while the row says running)
            "ALTER TABLE sandbox_runs ADD COLUMN pid INTEGER",
            "ALTER TABLE sandbox_runs ADD COLUMN pid_start TEXT",
            "ALTER TABLE sandbox_runs ADD COLUMN host TEXT",
            # eval: an episode that could not run (unreachable policy endpoint, sandbox failure) is not a result
            "ALTER TABLE eval_results ADD COLUMN error TEXT",
        ],
    ),
    (
        3,
        "eval results know whether their competition has a leaderboard (medals and HumanRank are n/a without one)",
        ["ALTER TABLE eval_results ADD COLUMN has_leaderboard INTEGER NOT NULL DEFAULT 1"],
    ),
    (
        4,
        "turns: the policy version and finish reason of each sampled assistant turn",
        [
            "ALTER TABLE turns ADD COLUMN policy_version INTEGER",  # weights that sampled it (GRPO updates behind)
            "ALTER TABLE turns ADD COLUMN finish_reason TEXT",      # stop | length
        ],
    ),
    (
        5,
        "trajectories: their staleness when GRPO trained on them (updates between the sampling and trained weights)",
        ["ALTER TABLE trajectories ADD COLUMN staleness INTEGER"],
    ),
    (
        6,
        "population boards: each leaderboard entry's family and parameters; an eval result's rank is named for its "
        "board (HumanRank only on a real leaderboard) and records which board it was graded on",
        [
            "ALTER TABLE leaderboard ADD COLUMN family TEXT",   # tree ensemble, linear, ... (the Board tab groups)
            "ALTER TABLE leaderboard ADD COLUMN params TEXT",   # JSON: the entry's hyperparameters and feature set
            "ALTER TABLE eval_results RENAME COLUMN human_rank TO rank",
            "ALTER TABLE eval_results ADD COLUMN board TEXT",   # human | population | paper | ladder (NULL: none)
            "ALTER TABLE eval_results ADD COLUMN board_entries INTEGER",
        ],
    ),
]

LATEST = MIGRATIONS[-1][0]
