# Owns: catalogue rows for the automations area (en + zh): automation-create results
# and refusals (docs/rules.md AUT). Keys are prefixed "automations.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "automations.no_permission": {
        "en": (
            "refused: the sender's creator ({user}) lacks the '{permission}' permission "
            "on project {project}; no automation was registered"
        ),
        "zh": "已拒绝：发送方创建人（{user}）没有项目 {project} 的 {permission} 权限；未登记任何自动化",
    },
    "automations.permission_failed": {
        "en": (
            "refused: the '{permission}' permission lookup failed ({error}), so the block "
            "is refused (fail closed); no automation was registered"
        ),
        "zh": "已拒绝：{permission} 权限查询失败（{error}），按失败即拒绝处理；未登记任何自动化",
    },
    "automations.quota_exhausted": {
        "en": (
            "refused: the quota of the sender's creator ({user}) is exhausted, so no "
            "automation-create block of this turn is run"
        ),
        "zh": "已拒绝：发送方创建人（{user}）的配额已用尽，本轮所有 automation-create 块都不执行",
    },
    "automations.first_run_past": {
        "en": (
            "refused: first_run_at {given} ({given_iso}) is before the current time {now} "
            "({now_iso}); give a later time (epoch seconds, or ISO 8601 - without an offset "
            "it is {zone} time), or leave first_run_at out to be due at once; "
            "nothing was registered"
        ),
        "zh": (
            "已拒绝：first_run_at {given}（{given_iso}）早于当前时间 {now}（{now_iso}）；"
            "请给一个更晚的时间（epoch 秒，或 ISO 8601——不带偏移量时按 {zone} 时间），"
            "或不填 first_run_at 表示建完即到期；未登记任何自动化"
        ),
    },
    "automations.name_taken": {
        "en": (
            "refused: an active automation of this project is already named '{name}'; "
            "choose another name, or leave name out to get an automatic one; nothing was "
            "registered"
        ),
        "zh": "已拒绝：本项目已有名为“{name}”的 active 自动化；请换一个名字，或不填 name 由系统自动生成；未登记任何自动化",
    },
    "automations.created": {
        "en": (
            "registered automation '{name}'{generated} (id {id}): {schedule}; {binding}. "
            "Creating it only registered the definition: nothing has run yet"
        ),
        "zh": "已登记自动化“{name}”{generated}（id {id}）：{schedule}；{binding}。创建只是登记定义，尚未执行任何内容",
    },
    "automations.name_generated": {
        "en": " (name generated: the block gave none)",
        "zh": "（块中未给 name，已自动生成）",
    },
    "automations.schedule_repeat": {
        "en": "first run {first}, then every {interval} seconds",
        "zh": "首次运行{first}，之后每 {interval} 秒一次",
    },
    "automations.schedule_once": {
        "en": "runs once, {first}",
        "zh": "只运行一次，{first}",
    },
    "automations.when": {"en": "at {epoch} ({iso})", "zh": "于 {epoch}（{iso}）"},
    "automations.when_now": {
        "en": "as soon as it is registered ({iso})",
        "zh": "于登记后立即到期（{iso}）",
    },
    "automations.bound_heartbeat": {
        "en": "bound to this task (heartbeat): each run wakes this thread",
        "zh": "绑定到本任务（heartbeat）：每次到期唤醒本线程",
    },
    "automations.unbound": {
        "en": "each run starts a new independent task",
        "zh": "每次到期独立运行一个新任务",
    },
}
