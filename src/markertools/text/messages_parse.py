# Owns: catalogue rows for the parse area (en + zh). Keys are prefixed "parse.":
# extraction issues, strict-JSON refusals, field problems, notes on values changed
# (clamps, drops, ignores), what each field accepts ("parse.exp.*"), and the text of
# the agent guide (kind summaries "parse.sum.*", field meanings "parse.doc.*",
# guide framing "parse.guide.*").
#
# Every reason names the field, what was wrong, and what was expected.
from __future__ import annotations

from typing import Final

from markertools.text.messages_parse_guide import MESSAGES as _GUIDE

_EXTRACT: Final[dict[str, dict[str, str]]] = {
    "parse.unknown_kind": {
        "en": "unknown marker kind '{written}'; did you mean '{suggestion}'? (the block was not run)",
        "zh": "未知的标记类型 '{written}'；你是想写 '{suggestion}' 吗？（该块未执行）",
    },
    "parse.over_cap": {
        "en": "over the per-turn cap: at most {cap} {kind} block(s) run per turn; this was block {position}, so it was ignored",
        "zh": "超过每轮上限：每轮最多执行 {cap} 个 {kind} 块；这是第 {position} 块，已忽略",
    },
    "parse.over_cap_aliases": {
        "en": "over the per-turn cap: at most {cap} {kind} block(s) run per turn ({names} count together); this was block {position}, so it was ignored",
        "zh": "超过每轮上限：每轮最多执行 {cap} 个 {kind} 块（{names} 合并计数）；这是第 {position} 块，已忽略",
    },
    "parse.unclosed": {
        "en": "unclosed block: the '{written}' fence opened on line {line} has no closing fence of its own before the text (or its list item) ends; close it with the same fence characters on a line of their own",
        "zh": "未闭合的块：第 {line} 行打开的 '{written}' 围栏在文本（或其所在列表项）结束前没有自己的闭合围栏；请用相同的围栏字符单独成行闭合",
    },
    "parse.internal_error": {
        "en": "internal error while validating this {kind} block ({error}); it was not run — please report this",
        "zh": "校验该 {kind} 块时发生内部错误（{error}）；该块未执行——请报告此问题",
    },
}

_JSON: Final[dict[str, dict[str, str]]] = {
    "parse.json.empty": {
        "en": "the body is empty; expected one JSON object such as {{}}",
        "zh": "块体为空；应为一个 JSON 对象，例如 {{}}",
    },
    "parse.json.too_long": {
        "en": "the body has {length} characters; at most {max} are accepted",
        "zh": "块体有 {length} 个字符；最多接受 {max} 个",
    },
    "parse.json.syntax": {
        "en": "the body is not valid JSON: {detail} at line {line}, column {column} of the body; expected one JSON object",
        "zh": "块体不是合法 JSON：块体第 {line} 行第 {column} 列，{detail}；应为一个 JSON 对象",
    },
    "parse.json.not_object": {
        "en": "the body is {got}; expected one JSON object {{...}}",
        "zh": "块体是{got}；应为一个 JSON 对象 {{...}}",
    },
    "parse.json.nonfinite": {
        "en": "the body uses {literal}, which is not a JSON number; expected a finite number",
        "zh": "块体使用了 {literal}，它不是 JSON 数字；应为有限数字",
    },
    "parse.json.overflow": {
        "en": "the number {literal} is too large (it overflows to infinity); expected a finite number",
        "zh": "数字 {literal} 过大（会溢出为无穷大）；应为有限数字",
    },
    "parse.json.long_int": {
        "en": "the integer {literal} has {digits} digits; at most 30 digits are accepted",
        "zh": "整数 {literal} 有 {digits} 位；最多接受 30 位",
    },
    "parse.json.duplicate_key": {
        "en": "the key '{key}' appears twice in one object; expected each field once",
        "zh": "键 '{key}' 在同一对象中出现两次；每个字段只能写一次",
    },
    "parse.json.too_deep": {
        "en": "the body nests arrays/objects deeper than {max} levels; expected at most {max}",
        "zh": "块体中数组/对象嵌套超过 {max} 层；最多允许 {max} 层",
    },
    "parse.json.surrogate": {
        "en": "the body contains an unpaired surrogate (U+{code}), which is not valid Unicode; expected valid text",
        "zh": "块体包含未配对的代理码位（U+{code}），不是合法 Unicode；应为合法文本",
    },
}

_TYPES: Final[dict[str, dict[str, str]]] = {
    "parse.type.list": {"en": "a list", "zh": "一个列表"},
    "parse.type.object": {"en": "an object", "zh": "一个对象"},
    "parse.type.string": {"en": "a string", "zh": "一个字符串"},
    "parse.type.number": {"en": "a number", "zh": "一个数字"},
    "parse.type.bool": {"en": "true/false", "zh": "布尔值 true/false"},
    "parse.type.null": {"en": "null", "zh": "null"},
    "parse.got.value": {"en": "{value}", "zh": "{value}"},
    "parse.got.string": {"en": 'the string "{value}"', "zh": '字符串 "{value}"'},
}

_FIELDS: Final[dict[str, dict[str, str]]] = {
    "parse.field.missing": {
        "en": "field '{field}' is required but missing (accepted spellings: {spellings}); expected {exp}",
        "zh": "缺少必填字段 '{field}'（可用写法：{spellings}）；应为{exp}",
    },
    "parse.field.missing_with_unknown": {
        "en": "field '{field}' is required but missing (accepted spellings: {spellings}; this body has unknown field(s) {unknown}); expected {exp}",
        "zh": "缺少必填字段 '{field}'（可用写法：{spellings}；块体中有未知字段 {unknown}）；应为{exp}",
    },
    "parse.field.type": {
        "en": "field '{field}' is {got}; expected {exp}",
        "zh": "字段 '{field}' 的值是 {got}；应为{exp}",
    },
    "parse.field.blank": {
        "en": "field '{field}' is empty or only whitespace; expected {exp}",
        "zh": "字段 '{field}' 为空或只有空白；应为{exp}",
    },
    "parse.field.length": {
        "en": "field '{field}' has {length} characters; expected {exp}",
        "zh": "字段 '{field}' 有 {length} 个字符；应为{exp}",
    },
    "parse.field.choice": {
        "en": "field '{field}' is {got}; expected {exp}",
        "zh": "字段 '{field}' 的值是 {got}；应为{exp}",
    },
    "parse.field.fraction": {
        "en": "field '{field}' is {got}, which is not a whole number; expected an integer",
        "zh": "字段 '{field}' 的值 {got} 不是整数；应为整数",
    },
    "parse.field.range": {
        "en": "field '{field}' is {got}, out of range (values outside are not clamped); expected {exp}",
        "zh": "字段 '{field}' 的值 {got} 超出范围（超出范围不会钳制）；应为{exp}",
    },
    "parse.field.negative_time": {
        "en": "field '{field}' is {got}; expected epoch seconds of 0 or more (values of 1e11 or more are read as milliseconds)",
        "zh": "字段 '{field}' 的值是 {got}；应为不小于 0 的 epoch 秒（不小于 1e11 的值按毫秒计）",
    },
    "parse.field.time_range": {
        "en": "field '{field}' is {got}, outside the years 1–9999; expected a real point in time",
        "zh": "字段 '{field}' 的值 {got} 超出公元 1–9999 年；应为真实的时间点",
    },
    "parse.field.time": {
        "en": "field '{field}' is {got}; expected epoch seconds, or an ISO 8601 time written as 2026-10-30, 2026-10-30T09:00, 2026-10-30 09:00:00 or 2026-10-30T09:00:00+08:00 (Z or ±HH:MM offset; without one it is {zone} time)",
        "zh": "字段 '{field}' 的值是 {got}；应为 epoch 秒，或 ISO 8601 时间，写法如 2026-10-30、2026-10-30T09:00、2026-10-30 09:00:00 或 2026-10-30T09:00:00+08:00（偏移写 Z 或 ±HH:MM；不写偏移按 {zone} 时间）",
    },
    "parse.field.empty_list": {
        "en": "field '{field}' is an empty list; expected {exp}",
        "zh": "字段 '{field}' 是空列表；应为{exp}",
    },
    "parse.field.forbidden": {
        "en": "field '{field}' is {got}, but this kind does not accept it; leave it out or set it to null",
        "zh": "字段 '{field}' 的值是 {got}，但此类型不接受该字段；请去掉它或设为 null",
    },
    "parse.field.ambiguous": {
        "en": "fields {fields} all mean '{field}' but have different values; expected only one of them (or equal values)",
        "zh": "字段 {fields} 都表示 '{field}'，但取值不同；应只写其中一个（或取值相同）",
    },
    "parse.field.nothing_to_update": {
        "en": "nothing to update: expected 'id' and at least one non-null field among {fields}",
        "zh": "没有可更新的内容：除 'id' 外应至少有一个非 null 字段，可选 {fields}",
    },
}

_EXPECTED: Final[dict[str, dict[str, str]]] = {
    "parse.exp.text_range": {
        "en": "a string of {min}–{max} characters with a non-whitespace character",
        "zh": "{min}–{max} 个字符且含非空白字符的字符串",
    },
    "parse.exp.text_max": {
        "en": "a string of at most {max} characters",
        "zh": "最多 {max} 个字符的字符串",
    },
    "parse.exp.text_nonblank": {"en": "a non-empty string", "zh": "非空字符串"},
    "parse.exp.text": {"en": "a string", "zh": "字符串"},
    "parse.exp.ref": {
        "en": 'a task id string (or "@NAME" of a task created by this turn\'s task-create with that name)',
        "zh": '任务 id 字符串（或 "@NAME"，指本轮同名 task-create 创建的任务）',
    },
    "parse.exp.ref_list": {
        "en": 'a non-empty list of task id strings ("@NAME" allowed)',
        "zh": '非空的任务 id 字符串列表（可用 "@NAME"）',
    },
    "parse.exp.enum": {"en": "one of: {choices}", "zh": "以下之一：{choices}"},
    "parse.exp.int_clamp": {
        "en": "an integer (values outside {min}–{max} are clamped into it)",
        "zh": "整数（超出 {min}–{max} 的值会被钳制到该范围）",
    },
    "parse.exp.int_bounds": {
        "en": "an integer from {min} to {max}",
        "zh": "{min} 到 {max} 之间的整数",
    },
    "parse.exp.int": {"en": "an integer", "zh": "整数"},
    "parse.exp.int64": {"en": "a 64-bit integer", "zh": "64 位整数"},
    "parse.exp.epoch": {
        "en": "epoch seconds, a number of 0 or more (1e11 or more is read as milliseconds)",
        "zh": "epoch 秒，不小于 0 的数字（不小于 1e11 按毫秒计）",
    },
    "parse.exp.time": {
        "en": 'epoch seconds (1e11 or more = milliseconds) or an ISO 8601 string such as "2026-10-30T09:00:00+08:00" (no offset = {zone})',
        "zh": 'epoch 秒（不小于 1e11 按毫秒计）或 ISO 8601 字符串，如 "2026-10-30T09:00:00+08:00"（无偏移按 {zone}）',
    },
    "parse.exp.bool": {"en": "true or false", "zh": "true 或 false"},
    "parse.exp.forbidden": {"en": "nothing (leave it out)", "zh": "不填（去掉该字段）"},
}

_NOTES: Final[dict[str, dict[str, str]]] = {
    "parse.note.clamped": {
        "en": "{field} {given} is outside {min}–{max}; {used} was used",
        "zh": "{field} 的值 {given} 超出 {min}–{max}；实际使用 {used}",
    },
    "parse.note.milliseconds": {
        "en": "{field} looked like milliseconds; {used} epoch seconds ({iso}) was used",
        "zh": "{field} 看起来是毫秒；实际使用 {used} epoch 秒（{iso}）",
    },
    "parse.note.duplicates": {
        "en": "{field}: repeated ids were listed once: {ids}",
        "zh": "{field}：重复的 id 只保留一次：{ids}",
    },
    "parse.note.dropped": {
        "en": "{field}: only the first {max} targets are waited for; not waited for: {ids}",
        "zh": "{field}：只等待前 {max} 个目标；未等待：{ids}",
    },
    "parse.note.wait_used": {
        "en": "wait_seconds {wait}: the poll waits up to {timeout} s and checks every {interval} s ({why})",
        "zh": "wait_seconds {wait}：最多等待 {timeout} 秒，每 {interval} 秒查看一次（{why}）",
    },
    "parse.note.wait_snapshot": {
        "en": "wait_seconds {wait}: the poll takes one immediate snapshot and does not wait ({why})",
        "zh": "wait_seconds {wait}：只取一次即时快照，不等待（{why}）",
    },
    "parse.note.wait_limit": {
        "en": "{field} must be {min}–{max}, so {used} was used for it instead of {wait}",
        "zh": "{field} 须在 {min}–{max} 之间，因此实际使用 {used} 而不是 {wait}",
    },
    "parse.note.both": {"en": "{first}; {second}", "zh": "{first}；此外，{second}"},
    "parse.note.wait_seconds_override": {
        "en": "wait_seconds {wait} overrides {fields}",
        "zh": "wait_seconds {wait} 覆盖了 {fields}",
    },
    "parse.note.ignored_fields": {
        "en": "{kind} takes no fields; ignored: {fields}",
        "zh": "{kind} 不接受任何字段；已忽略：{fields}",
    },
    "parse.note.unknown_fields": {
        "en": "unknown field(s) ignored by {kind}: {fields}",
        "zh": "{kind} 忽略了未知字段：{fields}",
    },
}

MESSAGES: Final[dict[str, dict[str, str]]] = {
    **_EXTRACT,
    **_JSON,
    **_TYPES,
    **_FIELDS,
    **_EXPECTED,
    **_NOTES,
    **_GUIDE,
}
