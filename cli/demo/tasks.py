"""The demo's fixed suite: small coding tasks, each with the tools it needs, in order.

Each task is a user request and a plan: the tools the agent asks for, one per step. The agent
names the step's tool in ``tool_choice`` (llama-cpp-python streams tool calls only when a
function is named; see its profile) and the model writes the arguments. The prompts ask for
what such agents are asked every day: code with several lines (raw newlines inside a JSON
string), exact text to replace, a search, a command.
"""

from __future__ import annotations

import msgspec

__all__ = ["DEFAULT_BUDGETS", "SYSTEM_PROMPT", "TASKS", "Task"]

#: The ``max_tokens`` budgets a default run tries, smallest first.
DEFAULT_BUDGETS: tuple[int, ...] = (16, 32, 64, 256)

#: The system message: llama-cpp-python's ``chatml-function-calling`` template lists the tools
#: only inside a system message, so there must be one.
SYSTEM_PROMPT = (
    "You are a coding agent working in a small project folder. Use the tools to do the task. "
    "Paths are relative to the project folder."
)


class Task(msgspec.Struct, frozen=True):
    """One task: a name, what the user asks, and the tool of each step."""

    name: str
    prompt: str
    plan: tuple[str, ...]


TASKS: tuple[Task, ...] = (
    Task("hello", "Write a Python hello world program to the file hello.py.", ("write",)),
    Task(
        "todo-list",
        "Create the file todo.md with a markdown list of three chores, one per line.",
        ("write",),
    ),
    Task("read-notes", "Read the file notes.txt and tell me what is on my list.", ("read",)),
    Task(
        "enable-debug",
        "In config.ini, change the line `debug = false` to `debug = true`.",
        ("edit",),
    ),
    Task("find-todos", "Search the project for TODO comments.", ("search",)),
    Task("list-src", "List the files in the src folder.", ("run",)),
    Task(
        "poem",
        "Write a poem of four short lines to poem.txt, then read it back to check it.",
        ("write", "read"),
    ),
    Task(
        "change-port",
        "Read config.ini, then change the port from 8080 to 9090.",
        ("read", "edit"),
    ),
)
