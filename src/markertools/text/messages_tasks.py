# Owns: catalogue rows for the tasks area (en + zh): gate reasons (`gates`), task-create,
# task-cancel, task-retry and goal-convert results. Keys are prefixed "tasks.".
# Every reason names what was checked, what was found and what was expected.
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    # ---- verbs used inside gate reasons ----
    "tasks.verb_cancel": {"en": "cancel", "zh": "取消"},
    "tasks.verb_retry": {"en": "retry", "zh": "重试"},
    "tasks.verb_poll": {"en": "poll", "zh": "轮询"},
    "tasks.verb_wait": {"en": "wait for", "zh": "等待"},
    "tasks.verb_cost": {"en": "read the cost of", "zh": "查看费用"},
    # ---- gate reasons ----
    "tasks.gate_missing": {
        "en": "task {id} does not exist",
        "zh": "任务 {id} 不存在",
    },
    "tasks.gate_other_project": {
        "en": "task {id} belongs to another project; markers never act outside your own project",
        "zh": "任务 {id} 属于其他项目；标记块从不跨项目操作",
    },
    "tasks.gate_self": {
        "en": "a task cannot {verb} itself",
        "zh": "任务不能{verb}自己",
    },
    "tasks.gate_goal": {
        "en": "task {id} is a goal task; goal tasks are never affected by task-cancel or task-retry (you may still poll it)",
        "zh": "任务 {id} 是 goal 任务；task-cancel 与 task-retry 从不作用于 goal 任务（仍可轮询它）",
    },
    "tasks.gate_cancel_terminal": {
        "en": "task {id} is already '{status}', a final status; only queued or running tasks can be cancelled",
        "zh": "任务 {id} 已是终态“{status}”；只有 queued 或 running 的任务可以取消",
    },
    "tasks.gate_retry_status": {
        "en": "task {id} is '{status}'; only failed, interrupted or merge-failed tasks can be retried",
        "zh": "任务 {id} 的状态是“{status}”；只有 failed、interrupted 或 merge-failed 的任务可以重试",
    },
    "tasks.gate_unrelated": {
        "en": "task {id} is neither in your lineage (spawned by you or your descendants, within 32 parent steps) nor created by your creator; you may only {verb} such tasks",
        "zh": "任务 {id} 既不在你的派生链上（32 步内由你或你的后代派生），也不是同一创建人所建；你只能{verb}这类任务",
    },
    "tasks.gate_lacks": {
        "en": "your creator ({user}) lacks the '{permission}' permission on project {project}",
        "zh": "你的创建人（{user}）在项目 {project} 上没有“{permission}”权限",
    },
    "tasks.gate_lookup_failed": {
        "en": "the '{permission}' permission lookup failed ({error}); denied, because a failed lookup never grants",
        "zh": "“{permission}”权限查询失败（{error}）；已拒绝：查询失败从不视为有权限",
    },
    "tasks.gate_wrong_answer": {
        "en": "internal check: the gate needed the '{needed}' permission but was given the answer for '{got}'; denied",
        "zh": "内部检查：门禁需要“{needed}”权限，却拿到了“{got}”的查询结果；已拒绝",
    },
    "tasks.gate_lineage_only_allowed": {
        "en": "allowed through your lineage only: the '{permission}' permission lookup failed ({error})",
        "zh": "仅因目标在你的派生链上而放行：“{permission}”权限查询失败（{error}）",
    },
    "tasks.gate_lineage_only_denied": {
        "en": "the '{permission}' permission lookup failed ({error}); then only tasks in your lineage may be touched, and task {id} is related to you only through the same creator, so you may not {verb} it",
        "zh": "“{permission}”权限查询失败（{error}）；此时只允许操作派生链上的任务，而任务 {id} 与你只是同一创建人，所以不能{verb}它",
    },
    "tasks.gate_quota": {
        "en": "the quota of your creator ({user}) is exhausted; every task-create of this turn is rejected",
        "zh": "你的创建人（{user}）的配额已用尽；本轮所有 task-create 均被拒绝",
    },
    "tasks.gate_generation": {
        "en": "you are generation {generation}; only tasks below generation {limit} may spawn (at most {limit} spawned generations below a root task)",
        "zh": "你是第 {generation} 代；只有低于第 {limit} 代的任务可以派生（根任务之下最多派生 {limit} 代）",
    },
    "tasks.gate_children": {
        "en": "you already have {existing} direct children plus {this_turn} created earlier this turn; the cap is {cap}",
        "zh": "你已有 {existing} 个直接子任务，本轮此前又创建了 {this_turn} 个；上限是 {cap}",
    },
    # ---- task-create ----
    "tasks.created": {
        "en": "created task {id}: queued, executor {executor}, parent {parent}; it runs on its own in a fresh worktree and outlives you (poll it with task-poll)",
        "zh": "已创建任务 {id}：queued，执行器 {executor}，父任务 {parent}；它在全新的工作区独立运行，不随你结束（可用 task-poll 轮询）",
    },
    "tasks.created_named": {
        "en": 'created task {id} (name "{name}"; later blocks of this turn may refer to it as @{name}): queued, executor {executor}, parent {parent}; it runs on its own in a fresh worktree and outlives you',
        "zh": "已创建任务 {id}（名称“{name}”；本轮后续块可用 @{name} 引用它）：queued，执行器 {executor}，父任务 {parent}；它在全新的工作区独立运行，不随你结束",
    },
    "tasks.created_named_call": {
        "en": 'created task {id} (name "{name}"; later calls name it by its id {id}): queued, executor {executor}, parent {parent}; it runs on its own in a fresh worktree and outlives you',
        "zh": "已创建任务 {id}（名称“{name}”；之后的调用请用它的 id {id} 指代它）：queued，执行器 {executor}，父任务 {parent}；它在全新的工作区独立运行，不随你结束",
    },
    "tasks.created_named_ambiguous": {
        "en": 'created task {id} (name "{name}"; another task-create block of this turn uses the same name, so @{name} refers to neither): queued, executor {executor}, parent {parent}; it runs on its own in a fresh worktree and outlives you',
        "zh": "已创建任务 {id}（名称“{name}”；本轮另有 task-create 块使用同一名称，因此 @{name} 不指向任何一个）：queued，执行器 {executor}，父任务 {parent}；它在全新的工作区独立运行，不随你结束",
    },
    # ---- task-cancel ----
    "tasks.cancelled": {
        "en": "cancelled task {id}: it was '{old}', now 'interrupted'; {kill}",
        "zh": "已取消任务 {id}：原为“{old}”，现为“interrupted”；{kill}",
    },
    "tasks.kill_signalled": {
        "en": "its process group or container was killed ({detail})",
        "zh": "其进程组或容器已被终止（{detail}）",
    },
    "tasks.kill_none": {
        "en": "nothing was signalled; the executor said: {detail}",
        "zh": "没有发送终止信号；执行器的答复：{detail}",
    },
    "tasks.kill_none_plain": {
        "en": "no live process was signalled",
        "zh": "没有需要终止的存活进程",
    },
    "tasks.kill_failed": {
        "en": "but killing its process failed ({error}); the status change stands",
        "zh": "但终止其进程失败（{error}）；状态变更仍然有效",
    },
    "tasks.interrupted_reason": {
        "en": "cancelled by task {sender} through a task-cancel marker (line {line})",
        "zh": "由任务 {sender} 通过 task-cancel 标记取消（第 {line} 行）",
    },
    "tasks.changed_meanwhile": {
        "en": "task {id} changed meanwhile (it was '{status}' when checked); nothing was changed",
        "zh": "任务 {id} 在此期间已被改动（检查时为“{status}”）；未做任何改动",
    },
    # ---- task-retry ----
    "tasks.retried": {
        "en": "requeued task {id}: it was '{old}', now 'queued'; result_text, error_text and actual_model cleared, prompt and model kept",
        "zh": "已重新排队任务 {id}：原为“{old}”，现为“queued”；已清空 result_text、error_text 与 actual_model，保留 prompt 与模型",
    },
    # ---- goal-convert ----
    "tasks.goal_queued": {
        "en": "goal conversion queued: after this report you will receive '/goal' with your goal ({chars} characters) as your next input",
        "zh": "已排队转为 goal：在本报告之后，你的下一条输入将是带着目标（{chars} 字）的“/goal”",
    },
    # ---- notes appended to an entry ----
    "tasks.note_allowed": {"en": "note: {note}", "zh": "注意：{note}"},
}
