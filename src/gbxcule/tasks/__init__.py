"""Tasks: a game, its starts and actions, what it reads from RAM, its reward and its ends.

A task is a task file that runs no code (``gbxcule train --task path/to/task.toml``:
``task_file.py``, its predicates ``expressions.py``) or a :class:`Task` in a Python file
(``--task path/to/task.py``); see ``task.py`` for the fields, ``reads.py`` for RAM reads, ``terms.py`` for reward terms,
``runtime.py`` for how it runs on a backend and ``load.py`` for where tasks come from.
"""

from gbxcule.core.actions import Action
from gbxcule.core.step_end import StepEnd
from gbxcule.tasks.expressions import Expression, ExpressionError
from gbxcule.tasks.load import BUILTIN, load_run_task, load_task, save_run_task, trust_run_task
from gbxcule.tasks.reads import (
    BCD,
    S8,
    S16,
    U8,
    U16,
    U24,
    Bit,
    BitCount,
    Digits,
    Lookup,
    Read,
    ReadError,
    Unsigned,
)
from gbxcule.tasks.runtime import ReadValues, TaskRuntime
from gbxcule.tasks.task import Swarm, Task, TaskError
from gbxcule.tasks.terms import (
    Changed,
    Decrease,
    Delta,
    Increase,
    Novelty,
    Progress,
    StepCost,
    Term,
    TermError,
)

__all__ = [
    "Action",
    "BCD",
    "BUILTIN",
    "S8",
    "S16",
    "U8",
    "U16",
    "U24",
    "Bit",
    "BitCount",
    "Changed",
    "Decrease",
    "Delta",
    "Digits",
    "Expression",
    "ExpressionError",
    "Increase",
    "Lookup",
    "Novelty",
    "Progress",
    "Read",
    "ReadError",
    "ReadValues",
    "StepCost",
    "StepEnd",
    "Swarm",
    "Task",
    "TaskError",
    "TaskRuntime",
    "Term",
    "TermError",
    "Unsigned",
    "load_run_task",
    "load_task",
    "save_run_task",
    "trust_run_task",
]
