# Owns: catalogue rows for first-turn injection (en + zh): the project context (INJ-3),
# the open-todos section (INJ-4), the memory header, and the inspection notes saying why
# a section is absent. Keys are prefixed "inject.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "inject.project_header": {
        "en": "[Project context]",
        "zh": "[项目上下文]",
    },
    "inject.project_line": {
        "en": "Project: {name} (id {id})",
        "zh": "项目：{name}（id {id}）",
    },
    "inject.unnamed": {"en": "(unnamed)", "zh": "（未命名）"},
    "inject.repo_line": {"en": "Repository: {repo}", "zh": "仓库：{repo}"},
    "inject.repo_unbound": {"en": "not bound", "zh": "未绑定"},
    "inject.environment_line": {"en": "Environment: {environment}", "zh": "环境：{environment}"},
    "inject.environment": {
        "en": "{name} (branch {branch}, status {status})",
        "zh": "{name}（分支 {branch}，状态 {status}）",
    },
    "inject.task_list_example": {
        "en": "To see this project's tasks, write a task-list block, for example with the body {example}",
        "zh": "要查看本项目的任务，可写一个 task-list 块，例如块内容为 {example}",
    },
    "inject.todos_header": {
        "en": "[Open todos of this project: {shown}]",
        "zh": "[本项目未完成待办：{shown} 条]",
    },
    "inject.todos_header_more": {
        "en": "[Open todos of this project: {shown} of {total} shown, {more} more not shown]",
        "zh": "[本项目未完成待办：共 {total} 条，显示 {shown} 条，还有 {more} 条未显示]",
    },
    "inject.todos_label": {
        "en": "the project's open todos: id [status, priority] title",
        "zh": "本项目未完成待办：id [状态, 优先级] 标题",
    },
    "inject.todos_examples": {
        "en": "To change a todo, write a todo-update block with a body such as:",
        "zh": "要修改待办，可写一个 todo-update 块，块内容例如：",
    },
    "inject.memory_header": {"en": "[Memory]", "zh": "[记忆]"},
    "inject.note_not_fresh": {
        "en": "no injection: start '{start}' is not a fresh start (only 'fresh', 'retry' and 'resume' are)",
        "zh": "不注入：启动方式“{start}”不是全新启动（只有 fresh、retry 与 resume 是）",
    },
    "inject.note_coordinator": {
        "en": "no injection: coordinator tasks get none",
        "zh": "不注入：协调员任务不注入",
    },
    "inject.note_project_failed": {
        "en": "no project context: the project lookup failed ({error})",
        "zh": "无项目上下文：项目查询失败（{error}）",
    },
    "inject.note_project_missing": {
        "en": "no project context: project {project} was not found",
        "zh": "无项目上下文：找不到项目 {project}",
    },
    "inject.note_goal_only_project": {
        "en": "goal task: only the project context is injected (also before the goal); no todos, no resume preamble",
        "zh": "goal 任务：只注入项目上下文（也贴在 goal 前）；不注入待办与重跑前言",
    },
    "inject.note_todos_failed": {
        "en": "no todos section: the todo lookup failed ({error})",
        "zh": "无待办章节：待办查询失败（{error}）",
    },
    "inject.note_no_todos": {
        "en": "no todos section: the project has no unfinished todo",
        "zh": "无待办章节：本项目没有未完成待办",
    },
    "inject.note_assembly_failed": {
        "en": "no injection: assembling the first-turn prompt failed ({error}); the prompt is unchanged",
        "zh": "不注入：组装首轮提示失败（{error}）；提示保持原样",
    },
    "inject.note_resume_no_attempt": {
        "en": "no resume preamble: the ledger records no platform restart after the task's last manual retry",
        "zh": "无重跑前言：台账中没有该任务最近一次手动重试之后的平台重启记录",
    },
    "inject.note_retry_no_preamble": {
        "en": "no resume preamble: a claim after a manual retry gets none",
        "zh": "无重跑前言：手动重试后的认领不贴前言",
    },
}
