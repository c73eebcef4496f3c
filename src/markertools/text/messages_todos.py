# Owns: catalogue rows for the todos area (en + zh): todo-list / todo-create /
# todo-update results and refusals (docs/rules.md TDL/TDC/TDU). Keys are prefixed "todos.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "todos.no_permission": {
        "en": (
            "refused: the sender's creator ({user}) lacks the '{permission}' permission "
            "on project {project}; nothing changed"
        ),
        "zh": "已拒绝：发送方创建人（{user}）没有项目 {project} 的 {permission} 权限；未做任何改动",
    },
    "todos.permission_failed": {
        "en": (
            "refused: the '{permission}' permission lookup failed ({error}), so the block "
            "is refused (fail closed); nothing changed"
        ),
        "zh": "已拒绝：{permission} 权限查询失败（{error}），按失败即拒绝处理；未做任何改动",
    },
    "todos.filter_status": {"en": "status {statuses}", "zh": "状态 {statuses}"},
    "todos.filter_query": {
        "en": 'status {statuses}, title or description containing "{q}"',
        "zh": "状态 {statuses}，标题或描述包含“{q}”",
    },
    "todos.list_none": {
        "en": "no todo of this project matches ({filter})",
        "zh": "本项目没有符合条件的待办（{filter}）",
    },
    "todos.list_result": {
        "en": "{shown} todo(s) of this project ({filter}):\n{rows}",
        "zh": "本项目待办 {shown} 条（{filter}）：\n{rows}",
    },
    "todos.list_result_more": {
        "en": (
            "{total} todos of this project match ({filter}); the first {shown} are listed, "
            "{more} more not shown (narrow the list with status or q):\n{rows}"
        ),
        "zh": (
            "本项目有 {total} 条待办符合条件（{filter}）；列出前 {shown} 条，"
            "还有 {more} 条未列出（可用 status 或 q 缩小范围）：\n{rows}"
        ),
    },
    "todos.list_label": {
        "en": "todos of this project: id [status, priority] title",
        "zh": "本项目待办：id [状态, 优先级] 标题",
    },
    "todos.bad_reference": {
        "en": "refused: task_id {reason}; nothing changed",
        "zh": "已拒绝：task_id {reason}；未做任何改动",
    },
    "todos.task_not_in_project": {
        "en": (
            "refused: task_id '{task_id}' names no task in this project (a todo can only "
            "be linked to a task of the sender's project); nothing changed"
        ),
        "zh": "已拒绝：task_id“{task_id}”不是本项目的任务（待办只能关联发送方所在项目的任务）；未做任何改动",
    },
    "todos.created": {
        "en": "created todo {id} [{status}, {priority}]: {title}",
        "zh": "已创建待办 {id} [{status}, {priority}]：{title}",
    },
    "todos.created_linked": {
        "en": "created todo {id} [{status}, {priority}], linked to task {task_id}: {title}",
        "zh": "已创建待办 {id} [{status}, {priority}]，关联任务 {task_id}：{title}",
    },
    "todos.not_found": {
        "en": "refused: todo '{id}' not found in this project; nothing changed",
        "zh": "已拒绝：本项目中找不到待办“{id}”；未做任何改动",
    },
    "todos.changed_meanwhile": {
        "en": (
            "refused: todo '{id}' changed meanwhile (its status is no longer '{expected}'); "
            "nothing changed - read it again with todo-list and retry"
        ),
        "zh": "已拒绝：待办“{id}”在此期间已被改动（状态不再是“{expected}”）；未做任何改动，请用 todo-list 重新查看后再试",
    },
    "todos.nothing_to_change": {
        "en": "refused: the block names no field to change; nothing changed",
        "zh": "已拒绝：块中没有要修改的字段；未做任何改动",
    },
    "todos.updated": {
        "en": "updated todo {id}: {changes}",
        "zh": "已更新待办 {id}：{changes}",
    },
    "todos.change": {"en": "{field} {old} -> {new}", "zh": "{field} {old} -> {new}"},
}
