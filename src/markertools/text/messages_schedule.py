# Owns: catalogue rows for firing and managing automations (en + zh): what
# fire_due_automations made of each claimed slot (SCH-6) and the answers of the
# management calls (SCH-7). Keys are prefixed "schedule.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    # ---- firing (SCH-6) -----------------------------------------------------------------
    "schedule.slot": {"en": "slot {epoch} ({iso})", "zh": "时间槽 {epoch}（{iso}）"},
    "schedule.task_created": {
        "en": "automation '{name}' fired for {slot}: created task {task} in project {project}",
        "zh": "自动化“{name}”在{slot}触发：已在项目 {project} 中创建任务 {task}",
    },
    "schedule.task_recognised": {
        "en": (
            "automation '{name}' fired for {slot}: task {task} had already been created for "
            "this slot by an interrupted earlier fire; it was kept (not created twice) and the "
            "slot is now claimed"
        ),
        "zh": "自动化“{name}”在{slot}触发：此前一次中断的触发已为该时间槽创建任务 {task}；保留该任务（不重复创建），该时间槽现已认领",
    },
    "schedule.followup_queued": {
        "en": "automation '{name}' fired for {slot}: its prompt was queued as a follow-up of task {task}",
        "zh": "自动化“{name}”在{slot}触发：其 prompt 已作为任务 {task} 的后续消息排队",
    },
    "schedule.no_creator": {
        "en": (
            "skipped: automation '{name}' has no creator, so nobody holds the 'create_task' "
            "permission for its run; no task was created and {slot} counts as spent"
        ),
        "zh": "已跳过：自动化“{name}”没有创建人，无人具备其运行所需的 create_task 权限；未创建任务，{slot}记为已用",
    },
    "schedule.no_permission": {
        "en": (
            "skipped: the creator of automation '{name}' ({user}) lacks the 'create_task' "
            "permission on project {project}; no task was created and {slot} counts as spent"
        ),
        "zh": "已跳过：自动化“{name}”的创建人（{user}）没有项目 {project} 的 create_task 权限；未创建任务，{slot}记为已用",
    },
    "schedule.permission_failed": {
        "en": (
            "skipped: the 'create_task' permission lookup for automation '{name}' failed "
            "({error}), so the run is refused (fail closed); {slot} counts as spent"
        ),
        "zh": "已跳过：自动化“{name}”的 create_task 权限查询失败（{error}），按失败即拒绝处理；{slot}记为已用",
    },
    "schedule.quota_exhausted": {
        "en": (
            "skipped: the quota of the creator of automation '{name}' ({user}) is exhausted; "
            "no task was created and {slot} counts as spent"
        ),
        "zh": "已跳过：自动化“{name}”的创建人（{user}）配额已用尽；未创建任务，{slot}记为已用",
    },
    "schedule.quota_failed": {
        "en": (
            "skipped: the quota lookup for automation '{name}' failed ({error}), so the run "
            "is refused (fail closed); {slot} counts as spent"
        ),
        "zh": "已跳过：自动化“{name}”的配额查询失败（{error}），按失败即拒绝处理；{slot}记为已用",
    },
    "schedule.no_bound_task": {
        "en": (
            "skipped: heartbeat automation '{name}' is bound to no task; nothing was queued "
            "and {slot} counts as spent"
        ),
        "zh": "已跳过：heartbeat 自动化“{name}”未绑定任务；未排队任何消息，{slot}记为已用",
    },
    "schedule.bound_missing": {
        "en": (
            "skipped: the task {task} that heartbeat automation '{name}' wakes does not exist; "
            "nothing was queued and {slot} counts as spent"
        ),
        "zh": "已跳过：heartbeat 自动化“{name}”要唤醒的任务 {task} 不存在；未排队任何消息，{slot}记为已用",
    },
    "schedule.bound_failed": {
        "en": (
            "skipped: the task {task} that heartbeat automation '{name}' wakes is {status}; "
            "nothing was queued and {slot} counts as spent"
        ),
        "zh": "已跳过：heartbeat 自动化“{name}”要唤醒的任务 {task} 状态为 {status}；未排队任何消息，{slot}记为已用",
    },
    "schedule.fire_error": {
        "en": (
            "not fired: automation '{name}' could not be fired for {slot} ({error}); the "
            "slot was not claimed and is tried again by the next fire"
        ),
        "zh": "未触发：自动化“{name}”在{slot}触发失败（{error}）；该时间槽未被认领，下次触发时重试",
    },
    "schedule.materialise_error": {
        "en": (
            "skipped: automation '{name}' claimed {slot} but its run failed ({error}); the "
            "slot counts as spent"
        ),
        "zh": "已跳过：自动化“{name}”已认领{slot}，但运行失败（{error}）；该时间槽记为已用",
    },
    # ---- managing (SCH-7) ----------------------------------------------------------------
    "schedule.not_found": {
        "en": "no automation '{id}' (a deleted automation cannot be changed)",
        "zh": "没有自动化“{id}”（已删除的自动化不能修改）",
    },
    "schedule.wrong_status": {
        "en": "automation '{id}' is {status}, not {expected}; nothing changed",
        "zh": "自动化“{id}”的状态为 {status}，不是 {expected}；未做任何修改",
    },
    "schedule.changed_meanwhile": {
        "en": "automation '{id}' changed meanwhile; nothing changed, try again",
        "zh": "自动化“{id}”在此期间被修改；未做任何修改，请重试",
    },
    "schedule.resume_name_taken": {
        "en": (
            "automation '{id}' cannot be resumed: an active automation of its project is "
            "already named '{name}' (AUT-3); rename or pause that one first"
        ),
        "zh": "自动化“{id}”无法恢复：其项目中已有名为“{name}”的 active 自动化（AUT-3）；请先重命名或暂停那一个",
    },
    "schedule.paused": {
        "en": "paused automation '{id}': it is never due until resumed",
        "zh": "已暂停自动化“{id}”：恢复之前不会到期",
    },
    "schedule.resumed": {
        "en": "resumed automation '{id}': next run {next}",
        "zh": "已恢复自动化“{id}”：下次运行 {next}",
    },
    "schedule.deleted": {
        "en": "deleted automation '{id}': it never runs again",
        "zh": "已删除自动化“{id}”：不会再运行",
    },
    "schedule.updated": {
        "en": "updated automation '{id}' ({fields}): next run {next}",
        "zh": "已更新自动化“{id}”（{fields}）：下次运行 {next}",
    },
    "schedule.never": {
        "en": "never (it has run and is run-once)",
        "zh": "无（只运行一次且已运行）",
    },
    "schedule.nothing_to_update": {
        "en": "nothing to update: give a prompt, an interval, a first run time or once",
        "zh": "没有要更新的内容：请给出 prompt、间隔、首次运行时间或 once",
    },
    "schedule.bad_prompt": {
        "en": "prompt must hold 1-20000 characters with at least one that is not whitespace",
        "zh": "prompt 必须为 1-20000 个字符，且至少有一个非空白字符",
    },
    "schedule.bad_interval": {
        "en": "interval_seconds must be an integer from 60 to 2592000, not {given}",
        "zh": "interval_seconds 必须是 60 到 2592000 之间的整数，而不是 {given}",
    },
    "schedule.first_run_past": {
        "en": (
            "first_run_at {given} ({given_iso}) is before the current time {now} ({now_iso}); "
            "give a later time"
        ),
        "zh": "first_run_at {given}（{given_iso}）早于当前时间 {now}（{now_iso}）；请给一个更晚的时间",
    },
    "schedule.first_run_after_run": {
        "en": (
            "first_run_at only applies before the first run (SCH-1), and automation '{id}' has "
            "run {count} times; its next run is {next} (change interval_seconds to move later "
            "runs)"
        ),
        "zh": "first_run_at 只在首次运行前有效（SCH-1），而自动化“{id}”已运行 {count} 次；下次运行 {next}（修改 interval_seconds 可调整之后的运行）",
    },
}
