# Owns: catalogue rows for approvals (en + zh, APR-1..5): the reasons an answer is
# refused (the approval-answer gate, a person's answer), how a rule is named, what an
# answer reports, what the agent that asked is told, and how a waited task's pending
# requests read in task-poll / wait-threads. Keys are prefixed "approvals.".
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    # ---- refusals (APR-3) ----------------------------------------------------------
    "approvals.unknown": {
        "en": "approval request {id} does not exist",
        "zh": "审批请求 {id} 不存在",
    },
    "approvals.other_project": {
        "en": "approval request {id} belongs to another project",
        "zh": "审批请求 {id} 属于另一个项目",
    },
    "approvals.own_request": {
        "en": "approval request {id} is your own: an agent never answers its own request",
        "zh": "审批请求 {id} 是你自己提出的：代理永远不能回答自己的请求",
    },
    "approvals.answered_already": {
        "en": "approval request {id} was answered already ({status}, by {by}); the first answer stands",
        "zh": "审批请求 {id} 已被回答（{status}，回答者 {by}）；以第一个回答为准",
    },
    "approvals.expired_already": {
        "en": "approval request {id} expired ({reason}); it can no longer be answered",
        "zh": "审批请求 {id} 已过期（{reason}）；不能再回答",
    },
    "approvals.expired_at": {
        "en": "approval request {id} expired {seconds} s ago; it can no longer be answered",
        "zh": "审批请求 {id} 已于 {seconds} 秒前过期；不能再回答",
    },
    "approvals.task_gone": {
        "en": "the task {task} of approval request {id} no longer exists; the request can no longer be answered",
        "zh": "审批请求 {id} 所属的任务 {task} 已不存在；该请求不能再回答",
    },
    "approvals.task_left_running": {
        "en": "the task {task} of approval request {id} is '{status}', no longer running; the request can no longer be answered",
        "zh": "审批请求 {id} 所属的任务 {task} 处于“{status}”，已不在运行；该请求不能再回答",
    },
    "approvals.not_in_lineage": {
        "en": "approval request {id} is of task {task}, which is not below you in your lineage (spawned by you or your descendants, within 32 parent steps); only its ancestors may answer",
        "zh": "审批请求 {id} 来自任务 {task}，它不在你的派生链下方（32 步内由你或你的后代派生）；只有它的祖先任务可以回答",
    },
    "approvals.other_creator": {
        "en": "approval request {id} is of task {task}, which has another creator; only an ancestor with the same creator may answer",
        "zh": "审批请求 {id} 来自任务 {task}，它的创建人与你不同；只有同一创建人的祖先任务可以回答",
    },
    "approvals.deny_rule": {
        "en": "approval request {id} is covered by {rule}; a deny rule is final, so the request cannot be approved",
        "zh": "审批请求 {id} 被{rule}覆盖；拒绝规则是最终的，该请求不能被批准",
    },
    "approvals.no_store": {
        "en": "this store keeps no approval requests; nothing was answered",
        "zh": "此存储不保存审批请求；未做任何回答",
    },
    "approvals.changed_meanwhile": {
        "en": "approval request {id} changed meanwhile: {why}",
        "zh": "审批请求 {id} 在此期间已改变：{why}",
    },
    # ---- rules (APR-2) ---------------------------------------------------------------
    "approvals.action_allow": {"en": "allow", "zh": "允许"},
    "approvals.action_deny": {"en": "deny", "zh": "拒绝"},
    "approvals.rule": {
        "en": "rule {id} ({action} {what})",
        "zh": "规则 {id}（{action}：{what}）",
    },
    "approvals.rule_prefix": {
        "en": 'commands starting with "{prefix}"',
        "zh": '以 "{prefix}" 开头的命令',
    },
    "approvals.rule_path": {
        "en": 'file changes matching "{glob}" in the task\'s directory',
        "zh": '任务目录中匹配 "{glob}" 的文件改动',
    },
    "approvals.rule_kind": {
        "en": "every {kind} request",
        "zh": "所有 {kind} 请求",
    },
    # ---- approval-answer done (APR-3) ------------------------------------------------
    "approvals.decision_approve": {"en": "approved", "zh": "已批准"},
    "approvals.decision_deny": {"en": "denied", "zh": "已拒绝"},
    "approvals.answered": {
        "en": "approval request {id} of task {task}: {decision}; its agent is told and goes on",
        "zh": "任务 {task} 的审批请求 {id}：{decision}；已告知其代理并继续",
    },
    # ---- what the agent that asked is told (APR-1, broker) ---------------------------
    "approvals.told_rule": {
        "en": "{decision} by the project's {rule}",
        "zh": "由项目的{rule}{decision}",
    },
    "approvals.told_answer": {
        "en": "{decision} by {by}: {reason}",
        "zh": "由 {by} {decision}：{reason}",
    },
    "approvals.told_answer_plain": {
        "en": "{decision} by {by}",
        "zh": "由 {by} {decision}",
    },
    "approvals.told_expired": {
        "en": "declined: nobody answered approval request {id} within {seconds} s",
        "zh": "已拒绝：审批请求 {id} 在 {seconds} 秒内无人回答",
    },
    "approvals.told_ended": {
        "en": "declined: approval request {id} was not answered ({reason})",
        "zh": "已拒绝：审批请求 {id} 未获回答（{reason}）",
    },
    "approvals.told_refused": {
        "en": "declined: the request could not be recorded ({error})",
        "zh": "已拒绝：无法记录该请求（{error}）",
    },
    # ---- pending requests in task-poll / wait-threads (APR-4) ------------------------
    "approvals.pending": {
        "en": "waiting for an answer to {n} approval request(s); {who}\n{framed}",
        "zh": "正在等待 {n} 个审批请求的回答；{who}\n{framed}",
    },
    "approvals.you_may_answer": {
        "en": 'you may answer each with an approval-answer block (or the approval_answer tool): {{"approval_id": ID, "decision": "approve" or "deny", "reason": ...}}',
        "zh": '你可以用 approval-answer 块（或 approval_answer 工具）逐个回答：{{"approval_id": ID, "decision": "approve" 或 "deny", "reason": ...}}',
    },
    "approvals.others_answer": {
        "en": "only an ancestor task of it with the same creator, or a person (markertools approvals approve|deny ID), can answer",
        "zh": "只有它的同一创建人的祖先任务，或人工（markertools approvals approve|deny ID）可以回答",
    },
    "approvals.label": {
        "en": "pending approval requests of task {id} (one per line: id, kind, what it asks for, seconds until it expires)",
        "zh": "任务 {id} 的待回答审批请求（每行一个：id、类型、请求内容、距过期的秒数）",
    },
}
