"""A MultiWorkerMirrored worker joins its cluster before its task runs TensorFlow ops."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from kflow.components.trainer.launcher import free_ports


def test_a_worker_whose_task_runs_ops_before_training_still_makes_its_strategy():
    """WikiText-2's task learns its vocabulary with TensorFlow ops before the loop makes the strategy; TensorFlow
    configures collective ops only before the first op, so the strategy is made when the process is configured
    (the shipped wikitext2.yaml, 2 MWMS workers, failed with "Collective ops must be configured at program
    startup" when each worker prepared its own assets)."""
    (port,) = free_ports(1)
    tf_config = {"cluster": {"worker": [f"127.0.0.1:{port}"]}, "task": {"type": "worker", "index": 0}}
    script = textwrap.dedent("""
        import os
        from kflow.components.trainer.strategies.multi_worker_mirrored import Runtime

        Runtime.configure(None)
        import tensorflow as tf

        tf.reduce_sum(tf.constant([1.0, 2.0]))  # the task's preparation
        strategy = Runtime.__new__(Runtime).make()
        print(strategy is Runtime.made, type(strategy).__name__, strategy.num_replicas_in_sync, flush=True)
        os._exit(0)
    """)
    env = {**os.environ, "TF_CONFIG": json.dumps(tf_config), "TF_CPP_MIN_LOG_LEVEL": "2"}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["True", "CollectiveAllReduceStrategy", "1"]  # MWMS's own class
