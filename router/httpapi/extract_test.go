package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// extractCases are the ExtractModel table; they also seed FuzzExtractModel.
var extractCases = []struct {
	name   string
	body   string
	model  string
	stream bool
	bad    bool
}{
	{name: "empty", body: "", model: ""},
	{name: "whitespace", body: " \n\t ", model: ""},
	{name: "empty object", body: "{}", model: ""},
	{name: "simple", body: `{"model":"qwen","messages":[]}`, model: "qwen"},
	{name: "model last", body: `{"messages":[{"role":"user","content":"hi"}],"model":"m1"}`, model: "m1"},
	{name: "spaces", body: " { \"model\" : \"m1\" , \"stream\" : true } ", model: "m1", stream: true},
	{name: "stream false", body: `{"model":"m","stream":false}`, model: "m"},
	{name: "stream string", body: `{"model":"m","stream":"true"}`, model: "m"},
	{name: "null model", body: `{"model":null}`, model: ""},
	{name: "escaped value", body: `{"model":"a\"b\\c\u00e9\/"}`, model: `a"b\cé/`},
	{name: "escaped key", body: `{"mod\u0065l":"m2"}`, model: "m2"},
	{name: "nested model ignored", body: `{"x":{"model":"inner"},"y":[{"model":"z"}]}`, model: ""},
	{name: "nested then top", body: `{"x":{"model":"inner"},"model":"top"}`, model: "top"},
	{name: "duplicate last wins", body: `{"model":"a","model":"b"}`, model: "b"},
	{name: "case sensitive", body: `{"Model":"a"}`, model: ""},
	{name: "numbers", body: `{"a":-0.5e+10,"b":0,"c":12.25E-3,"model":"n"}`, model: "n"},
	{name: "literals", body: `{"a":true,"b":false,"c":null,"d":[true,false,null,[],{}],"model":"l"}`, model: "l"},
	{name: "escaped quote in other", body: `{"p":"say \"model\":\"x\"","model":"real"}`, model: "real"},
	{name: "backslash before quote", body: `{"p":"a\\","model":"ok"}`, model: "ok"},
	{name: "unicode", body: `{"model":"模型-7b","t":"日本"}`, model: "模型-7b"},
	{name: "not object", body: `["model"]`, bad: true},
	{name: "string top", body: `"model"`, bad: true},
	{name: "truncated", body: `{"model":"m1","messages":[`, bad: true},
	{name: "unterminated string", body: `{"model":"m1`, bad: true},
	{name: "model number", body: `{"model":5}`, bad: true},
	{name: "model object", body: `{"model":{"id":"x"}}`, bad: true},
	{name: "trailing garbage", body: `{"model":"m"} x`, bad: true},
	{name: "two objects", body: `{"model":"m"}{}`, bad: true},
	{name: "trailing comma", body: `{"model":"m",}`, bad: true},
	{name: "missing colon", body: `{"model" "m"}`, bad: true},
	{name: "bad literal", body: `{"a":tru,"model":"m"}`, bad: true},
	{name: "bad number", body: `{"a":01,"model":"m"}`, bad: true},
	{name: "bad escape", body: `{"a":"\x","model":"m"}`, bad: true},
	{name: "bad unicode escape", body: `{"a":"\u12G4","model":"m"}`, bad: true},
	{name: "mismatched brackets", body: `{"a":[1,2},"model":"m"}`, bad: true},
	{name: "unquoted key", body: `{model:"m"}`, bad: true},
	{name: "plain text", body: `model=m1`, bad: true},
}

func TestExtractModel(t *testing.T) {
	for _, tc := range extractCases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := scanBody([]byte(tc.body))
			if tc.bad {
				if err == nil {
					t.Fatalf("no error, model %q", f.Model)
				}
				if !errors.Is(err, errInvalidJSON) {
					t.Fatalf("error %v does not wrap errInvalidJSON", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Model != tc.model || f.Stream != tc.stream {
				t.Fatalf("got model %q stream %v, want %q %v", f.Model, f.Stream, tc.model, tc.stream)
			}
			if m, _ := ExtractModel([]byte(tc.body)); m != tc.model {
				t.Fatalf("ExtractModel = %q", m)
			}
		})
	}
}

// TestExtractModelDepth: nesting is bounded like encoding/json's (10000 levels), without recursion.
func TestExtractModelDepth(t *testing.T) {
	for _, depth := range []int{maxJSONDepth - 1, maxJSONDepth, maxJSONDepth + 1, 100000} {
		inner := depth - 1 // levels below the top-level object
		body := []byte(`{"model":"deep","x":` + strings.Repeat("[", inner) + strings.Repeat("]", inner) + `}`)
		_, err := ExtractModel(body)
		if want := json.Valid(body); (err == nil) != want {
			t.Errorf("depth %d: error %v, encoding/json valid=%v", depth, err, want)
		}
	}
}

// bigImageBody is a chat request carrying n bytes of inline base64 image before the model field.
func bigImageBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"messages":[{"role":"user","content":[{"type":"text","text":"what is this?\nline two\n"},`)
	b.WriteString(`{"type":"image_url","image_url":{"url":"data:image/png;base64,`)
	const chunk = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg"
	b.WriteString(strings.Repeat(chunk, n/len(chunk)+1)[:n])
	b.WriteString(`"}}]}],"stream":true,"model":"vision"}`)
	return b.Bytes()
}

func TestExtractModelHugeBody(t *testing.T) {
	body := bigImageBody(16 << 20)
	f, err := scanBody(body)
	if err != nil || f.Model != "vision" || !f.Stream {
		t.Fatalf("got %+v, %v", f, err)
	}
	allocs := testing.AllocsPerRun(2, func() {
		if _, err := ExtractModel(body); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Fatalf("%v allocations per 16 MiB body; the scanner must not copy values", allocs)
	}
}

func BenchmarkExtractModel(b *testing.B) {
	body := bigImageBody(16 << 20)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := ExtractModel(body); err != nil {
			b.Fatal(err)
		}
	}
}

// referenceFields decodes body with encoding/json: ok reports a well-formed object, isString that
// its last "model" is a string or null.
func referenceFields(body []byte) (model string, stream, ok, isString bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return "", false, false, false
	}
	stream = string(m["stream"]) == "true"
	raw, present := m["model"]
	if !present || string(raw) == "null" {
		return "", stream, true, true
	}
	if err := json.Unmarshal(raw, &model); err != nil {
		return "", stream, true, false
	}
	return model, stream, true, true
}

// controlToSpace replaces every byte below 0x20 with a space: the only leniency of the scanner is
// that it leaves raw control characters inside strings to llama-server.
func controlToSpace(body []byte) []byte {
	out := bytes.Clone(body)
	for i, c := range out {
		if c < 0x20 {
			out[i] = ' '
		}
	}
	return out
}

func FuzzExtractModel(f *testing.F) {
	for _, tc := range extractCases {
		f.Add([]byte(tc.body))
	}
	f.Add([]byte(`{"model":5,"model":"later"}`))
	f.Add([]byte("{\"model\":\"a\xffb\"}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := scanBody(body)
		if len(bytes.Trim(body, " \t\r\n")) == 0 {
			if err != nil || got.Model != "" {
				t.Fatalf("empty body: %+v, %v", got, err)
			}
			return
		}
		model, stream, ok, isString := referenceFields(body)
		switch {
		case ok && isString:
			if err != nil {
				t.Fatalf("valid body rejected: %v", err)
			}
			if got.Model != model || got.Stream != stream {
				t.Fatalf("got %+v, encoding/json says model %q stream %v", got, model, stream)
			}
		case ok:
			if err == nil {
				t.Fatalf("non-string model accepted: %+v", got)
			}
		default:
			if err == nil && !json.Valid(controlToSpace(body)) {
				t.Fatalf("invalid JSON accepted: %+v", got)
			}
			if err != nil && !errors.Is(err, errInvalidJSON) {
				t.Fatalf("error %v does not wrap errInvalidJSON", err)
			}
		}
	})
}
