# Owns: catalogue rows for the delivery orchestration itself (discards, references,
# port failures, report framing). Kind-specific rows live with their area.
from __future__ import annotations

from typing import Final

MESSAGES: Final[dict[str, dict[str, str]]] = {
    "deliver.discarded": {
        "en": "turn not delivered: {why}; {blocks} block(s) discarded",
        "zh": "本轮未投递：{why}；丢弃 {blocks} 个块",
    },
    "deliver.discarded_unparsed": {
        "en": "turn not delivered: {why}; the text was not parsed (turns of goal and coordinator tasks never are)",
        "zh": "本轮未投递：{why}；未解析文本（goal 任务与协调员任务的回合从不解析）",
    },
    "deliver.why_outcome": {
        "en": "the turn ended '{outcome}', only completed turns are delivered",
        "zh": "回合以“{outcome}”结束，只有 completed 回合会被投递",
    },
    "deliver.why_sender_missing": {
        "en": "the sender task does not exist",
        "zh": "发送方任务不存在",
    },
    "deliver.why_journal_unreadable": {
        "en": "the delivery journal could not be read ({error}); nothing ran, so no block can run twice - deliver the turn again",
        "zh": "无法读取投递记录（{error}）；未执行任何块，以免重复执行——请再次投递此轮",
    },
    "deliver.why_sender_unreadable": {
        "en": "the sender task could not be read ({error})",
        "zh": "无法读取发送方任务（{error}）",
    },
    "deliver.why_goal_or_coordinator": {
        "en": "goal and coordinator tasks never run marker blocks",
        "zh": "goal 任务与协调员任务不执行标记块",
    },
    "deliver.why_cancelled": {"en": "the sender was cancelled", "zh": "发送方已被取消"},
    "deliver.why_not_running": {
        "en": "the sender task is not running (it is {status}); only a running task's turns are delivered",
        "zh": "发送方任务未在运行（当前为 {status}）；只投递运行中任务的回合",
    },
    "deliver.sender_cancelled": {
        "en": "not run: the sender was cancelled during delivery",
        "zh": "未执行：投递期间发送方已被取消",
    },
    "deliver.ref_ambiguous": {
        "en": "reference {ref} is ambiguous: two task-create blocks of this turn use that name",
        "zh": "引用 {ref} 有歧义：本轮有两个 task-create 块使用了这个名字",
    },
    "deliver.ref_unresolved": {
        "en": "reference {ref} names no task created in this turn (no task-create with that name succeeded)",
        "zh": "引用 {ref} 没有对应本轮创建的任务（没有同名 task-create 成功）",
    },
    "deliver.port_failed": {
        "en": "rejected: a storage or service call failed ({error}); nothing else was changed by this block",
        "zh": "已拒绝：存储或服务调用失败（{error}）；本块未做其他改动",
    },
    "deliver.no_handler": {
        "en": "rejected: this build cannot execute '{kind}' blocks",
        "zh": "已拒绝：当前版本无法执行“{kind}”块",
    },
    "deliver.audit_failed": {
        "en": "{reason} (warning: the audit record could not be written: {error})",
        "zh": "{reason}（警告：审计记录写入失败：{error}）",
    },
    "deliver.with_notes": {
        "en": "{reason}\n(notes: {notes})",
        "zh": "{reason}\n（说明：{notes}）",
    },
    "report.header": {
        "en": "markertools report: {blocks} block(s) from your last turn ({counts}).",
        "zh": "markertools 报告：上一轮共 {blocks} 个块（{counts}）。",
    },
    "report.count_done": {"en": "{n} done", "zh": "完成 {n}"},
    "report.count_rejected": {"en": "{n} rejected", "zh": "拒绝 {n}"},
    "report.count_skipped": {"en": "{n} skipped", "zh": "跳过 {n}"},
    "report.count_ignored": {"en": "{n} ignored", "zh": "忽略 {n}"},
    "report.outcome_done": {"en": "done", "zh": "完成"},
    "report.outcome_rejected": {"en": "rejected", "zh": "拒绝"},
    "report.outcome_skipped": {"en": "skipped", "zh": "跳过"},
    "report.outcome_ignored": {"en": "ignored", "zh": "忽略"},
    "report.entry": {
        "en": "[{n}] {kind} (line {line}): {outcome}",
        "zh": "[{n}] {kind}（第 {line} 行）：{outcome}",
    },
    "report.entry_summary": {
        "en": "[{n}] {kind} (lines {line}–{last}): {count} × {outcome}",
        "zh": "[{n}] {kind}（第 {line}–{last} 行）：{count} 个{outcome}",
    },
    "report.summary_issues": {
        "en": "{count} more {kind} block(s) {outcome}, lines {first} to {last}; the report lists at most {max} skipped or ignored blocks one by one and counts the rest per kind and outcome",
        "zh": "另有 {count} 个 {kind} 块被{outcome}，位于第 {first} 至 {last} 行；报告最多逐个列出 {max} 个被跳过或忽略的块，其余按类型和结果计数",
    },
    "report.summary_near_miss": {
        "en": "{count} more fence(s) with an unknown kind close to '{kind}' {outcome} (not run), lines {first} to {last}; the report lists at most {max} skipped or ignored blocks one by one and counts the rest per kind and outcome",
        "zh": "另有 {count} 个类型未知、与 '{kind}' 相近的围栏被{outcome}（未执行），位于第 {first} 至 {last} 行；报告最多逐个列出 {max} 个被跳过或忽略的块，其余按类型和结果计数",
    },
    "report.entry_target": {
        "en": "[{n}] {kind} (line {line}) -> {target}: {outcome}",
        "zh": "[{n}] {kind}（第 {line} 行）-> {target}：{outcome}",
    },
}
