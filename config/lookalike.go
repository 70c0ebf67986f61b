package config

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A DSN key that looks like one of ours but is not (rеtrуExec with two
// Cyrillic letters, retry\u200bExec with a zero-width space) would reach
// the driver, which ignores it or sends it to the server, and the setting
// would silently not apply. nearKey compares keys by how they look: the
// key with its invisible characters removed and its look-alike letters
// folded to the Latin letters they imitate (foldKey), letter by letter.

// foldKey returns name as it reads: lower-case, without invisible
// characters (invisible), and with each look-alike of a Latin letter or
// digit replaced by it (lookalike).
func foldKey(name string) []rune {
	out := make([]rune, 0, len(name))
	for _, r := range name {
		if invisible(r) {
			continue
		}
		out = append(out, unicode.ToLower(lookalike(r)))
	}
	return out
}

// invisible reports a character that shows nothing, or nothing of its
// own: the format characters (Unicode category Cf: zero-width space,
// joiners, soft hyphen, byte order mark, bidirectional marks, word
// joiner, tags), combining marks (Mn, Me: they only decorate the letter
// before them, variation selectors and the combining grapheme joiner
// among them), and the fillers that render blank (Hangul fillers,
// braille blank).
func invisible(r rune) bool {
	switch r {
	case '\u115F', '\u1160', '\u3164', '\uFFA0', '\u2800':
		return true
	}
	return r >= utf8.RuneSelf && unicode.In(r, unicode.Cf, unicode.Mn, unicode.Me)
}

// lookalike returns the ASCII letter or digit that r imitates, or r: the
// fullwidth forms, the mathematical alphanumeric symbols (bold, italic,
// script, … A–Z, a–z, 0–9), and the Cyrillic, Greek and Latin letters
// that render as a Latin letter (after Unicode's confusables list).
func lookalike(r rune) rune {
	switch {
	case r < utf8.RuneSelf:
		return r
	case r >= '\uFF01' && r <= '\uFF5E': // fullwidth ASCII
		return r - 0xFEE0
	case r >= 0x1D400 && r <= 0x1D6A3: // mathematical A–Z, a–z, in 13 styles
		i := (r - 0x1D400) % 52
		if i < 26 {
			return 'A' + i
		}
		return 'a' + i - 26
	case r >= 0x1D7CE && r <= 0x1D7FF: // mathematical digits, in 5 styles
		return '0' + (r-0x1D7CE)%10
	}
	if l, ok := confusables[r]; ok {
		return l
	}
	return r
}

// confusables maps letters of other scripts to the Latin letter they
// render as, in common fonts.
var confusables = map[rune]rune{
	// Cyrillic.
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c',
	'т': 't', 'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ї': 'i', 'ј': 'j', 'һ': 'h', 'ԁ': 'd', 'ԛ': 'q',
	'ԝ': 'w', 'ӏ': 'l', 'ɡ': 'g', 'ү': 'y', 'ց': 'g', 'ո': 'n', 'ս': 'u',
	'А': 'A', 'В': 'B', 'Е': 'E', 'Ё': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C',
	'Т': 'T', 'У': 'Y', 'Х': 'X', 'Ѕ': 'S', 'І': 'I', 'Ї': 'I', 'Ј': 'J', 'Ԁ': 'D', 'Ԛ': 'Q', 'Ԝ': 'W',
	'Ӏ': 'I', 'Ү': 'Y',
	// Greek.
	'α': 'a', 'β': 'b', 'γ': 'y', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't',
	'υ': 'u', 'χ': 'x', 'ω': 'w', 'ϲ': 'c', 'ϳ': 'j',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X', 'Ϲ': 'C',
	// Latin and letterlike symbols.
	'ı': 'i', 'ȷ': 'j', 'ɑ': 'a', 'ɩ': 'i', 'ℓ': 'l', 'ſ': 's', 'K': 'K', 'Å': 'A',
	'ℯ': 'e', 'ℊ': 'g', 'ℎ': 'h', 'ℴ': 'o', 'ℹ': 'i', 'ⅰ': 'i', 'ⅼ': 'l', 'ⅽ': 'c', 'ⅾ': 'd', 'ⅿ': 'm',
	'Ⅰ': 'I', 'Ⅴ': 'V', 'Ⅹ': 'X', 'Ⅼ': 'L', 'Ⅽ': 'C', 'Ⅾ': 'D', 'Ⅿ': 'M',
	'ᴀ': 'a', 'ʙ': 'b', 'ᴄ': 'c', 'ᴅ': 'd', 'ᴇ': 'e', 'ɢ': 'g', 'ʜ': 'h', 'ɪ': 'i', 'ᴊ': 'j', 'ᴋ': 'k',
	'ʟ': 'l', 'ᴍ': 'm', 'ɴ': 'n', 'ᴏ': 'o', 'ᴘ': 'p', 'ʀ': 'r', 'ꜱ': 's', 'ᴛ': 't', 'ᴜ': 'u', 'ᴠ': 'v',
	'ᴡ': 'w', 'ʏ': 'y', 'ᴢ': 'z',
}

// notASCII returns the characters of name that are not ASCII, written
// U+XXXX, for an error that must show what the eye does not see.
func notASCII(name string) string {
	var out []string
	for _, r := range name {
		if r >= utf8.RuneSelf {
			out = append(out, fmt.Sprintf("U+%04X", r))
		}
	}
	return strings.Join(out, ", ")
}
