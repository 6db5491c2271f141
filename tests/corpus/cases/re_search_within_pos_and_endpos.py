# A search within a window of its subject: `pattern.search(s, pos, endpos)`
# (and match, fullmatch, findall, finditer) as CPython reads `pos` and
# `endpos` (monty took the subject alone: TypeError), with `m.pos` and
# `m.endpos`; and the `re` reprs cut as CPython cuts them (a pattern's at
# 200 characters, a match's text at 50).
import re
p = re.compile(r'\d+')
word = re.compile(r'\bb')
out = {
    'search_pos': p.search('a1b22', pos=2).group(),
    'search_both': p.search('123456', 1, 3).span(),
    'findall_window': p.findall('1 22 333 4444', 2, 9),
    'finditer_spans': [m.span() for m in p.finditer('1 22 333', pos=1)],
    'match_at_pos': re.compile('b+').match('abbc', 1).group(),
    'match_not_at_pos': re.compile('b').match('abc', 0),
    'caret_only_at_start': re.compile('^a').search('ba', 1),
    'dollar_at_endpos': re.compile('a$').search('ab', 0, 1).span(),
    'boundary_sees_before_pos': word.search('ab', 1),
    'lookbehind_sees_before_pos': re.compile(r'(?<=a)b').match('ab', 1).group(),
    'fullmatch_window': re.compile('b').fullmatch('abc', 1, 2).span(),
    'fullmatch_window_short': re.compile('b').fullmatch('abc', 1, 3),
    'pos_past_endpos': re.compile('').search('abc', 2, 1),
    'findall_past_endpos': re.compile('').findall('abc', 2, 1),
    'empty_matches_in_window': [m.span() for m in re.compile('').finditer('abc', 1, 2)],
    'clamped': [(m.pos, m.endpos) for m in (re.compile('').search('abc', 5), re.compile('').search('abc', -2, 99), re.compile('b').search('abc'))],
    'non_ascii': re.compile('é+').search('aéébéé', 3).span(),
    'non_ascii_endpos': re.compile('é+').findall('éééé', 1, 3),
    'long_match_repr': repr(re.match('a+', 'a' * 100)),
    'long_pattern_repr': repr(re.compile('x' * 300)),
    'short_reprs': [repr(re.compile('a', re.I)), repr(re.search('b', 'abc'))],
}
try:
    p.search('1', 1.5)
except TypeError as e:
    out['float_pos'] = str(e)
out
