package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestWorkersParseAndRender(t *testing.T) {
	text := `
[workers.a]
address = "192.168.1.20:50052"
token = "tok-a-0123456789-0123456789-0123"

[workers.b]
address = "box-b:50053"
token = "tok-b-0123456789-0123456789-0123"

[models."big"]
workers = ["a", "b"]

[models."big".variants."solo"]
workers = ["b"]
`
	c, err := Parse("config.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Workers["b"]; got != (Worker{Address: "box-b:50053", Token: "tok-b-0123456789-0123456789-0123"}) {
		t.Fatalf("worker b = %+v", got)
	}
	if got := c.ModelSettings("big").Workers; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("big's workers = %v", got)
	}
	if got := c.ModelSettings("big@solo").Workers; !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("the variant's workers = %v", got)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}
	again, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Workers, c.Workers) || !reflect.DeepEqual(again.Models["big"].Workers, []string{"a", "b"}) {
		t.Fatalf("saved and read again: %+v %+v", again.Workers, again.Models["big"])
	}
	cl := c.Clone()
	cl.Workers["a"] = Worker{Address: "x:1", Token: "t"}
	cl.Models["big"].Workers[0] = "z"
	if c.Workers["a"].Address != "192.168.1.20:50052" || c.Models["big"].Workers[0] != "a" {
		t.Fatal("a clone shares the workers with its original")
	}
}

func TestWorkersDefaultFileDocumentsThem(t *testing.T) {
	text := DefaultFileText()
	for _, want := range []string{"# [workers.desk]", "# address = ", "# token = ", "# workers = [\"desk\"]"} {
		if !strings.Contains(text, want) {
			t.Errorf("the default file lacks %q", want)
		}
	}
	if _, err := Parse("default.toml", []byte(text)); err != nil {
		t.Fatal(err)
	}
}

func TestWorkersValidate(t *testing.T) {
	rows := []struct {
		name string
		text string
		want string // "" = valid
	}{
		{"valid", "[workers.a]\naddress = \"10.0.0.2:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[models.m]\nworkers = [\"a\"]\n", ""},
		{"unknown worker", "[workers.a]\naddress = \"10.0.0.2:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[models.m]\nworkers = [\"b\"]\n",
			`key "models.m.workers": no worker "b": add a [workers.b] section with its address and token (configured: a)`},
		{"unknown worker, none configured", "[models.m]\nworkers = [\"b\"]\n", `no worker "b": add a [workers.b] section with its address and token (none is configured)`},
		{"unknown worker of a variant", "[models.m.variants.v]\nworkers = [\"b\"]\n", `key "models.m.variants.v.workers": no worker "b"`},
		{"listed twice", "[workers.a]\naddress = \"10.0.0.2:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[models.m]\nworkers = [\"a\", \"a\"]\n",
			`key "models.m.workers": worker "a" is listed twice`},
		{"empty token", "[workers.a]\naddress = \"10.0.0.2:50052\"\ntoken = \" \"\n", `key "workers.a.token": a worker needs its token`},
		{"no token", "[workers.a]\naddress = \"10.0.0.2:50052\"\n", `key "workers.a.token": a worker needs its token`},
		{"short token", "[workers.a]\naddress = \"10.0.0.2:50052\"\ntoken = \"sixteen-chars-ok\"\n",
			`key "workers.a.token": a worker token has at least 32 characters (this one 16): use the one "llamatray worker" makes`},
		{"token with a space around it", "[workers.a]\naddress = \"10.0.0.2:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567 \"\n", `key "workers.a.token": a worker token has no spaces around it`},
		{"no address", "[workers.a]\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n", `key "workers.a.address": a worker needs its address`},
		{"address without port", "[workers.a]\naddress = \"10.0.0.2\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n", `key "workers.a.address": "10.0.0.2" is not host:port`},
		{"port out of range", "[workers.a]\naddress = \"h:70000\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n", `key "workers.a.address": port "70000" must be a number from 1 to 65535`},
		{"no host", "[workers.a]\naddress = \":50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n", `key "workers.a.address": ":50052" has no host`},
		{"two workers at one address", "[workers.a]\naddress = \"h:1\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[workers.b]\naddress = \"h:1\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n",
			`key "workers.b.address": h:1 is also the address of worker "a"`},
		{"one machine spelt two ways", "[workers.a]\naddress = \"localhost:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[workers.b]\naddress = \"127.0.0.1:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n",
			`key "workers.b.address": 127.0.0.1:50052 is also the address of worker "a" (localhost:50052)`},
		{"::1 and localhost", "[workers.a]\naddress = \"[::1]:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[workers.b]\naddress = \"LOCALHOST:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n",
			`key "workers.b.address": LOCALHOST:50052 is also the address of worker "a"`},
		{"host names in two cases", "[workers.a]\naddress = \"Desk.lan:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[workers.b]\naddress = \"desk.LAN:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n",
			`key "workers.b.address": desk.LAN:50052 is also the address of worker "a"`},
		{"IPv6 spelt two ways", "[workers.a]\naddress = \"[2001:DB8::1]:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[workers.b]\naddress = \"[2001:db8:0::1]:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n",
			`key "workers.b.address": [2001:db8:0::1]:50052 is also the address of worker "a"`},
		{"one machine, two ports", "[workers.a]\naddress = \"localhost:50052\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n[workers.b]\naddress = \"127.0.0.1:50053\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n", ""},
		{"bad name", "[workers.\"a b\"]\naddress = \"h:1\"\ntoken = \"abcd-efgh-ijkl-mnop-qrst-uvwx-yz23-4567\"\n", `worker name "a b" may hold only letters`},
		{"--rpc in args", "[models.m]\nargs = [\"--rpc\", \"h:1\"]\n", `workers`},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			_, err := Parse("config.toml", []byte(r.text))
			switch {
			case r.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case r.want != "" && err == nil:
				t.Fatalf("want %q, got no error", r.want)
			case r.want != "" && !strings.Contains(err.Error(), r.want):
				t.Fatalf("error %q lacks %q", err, r.want)
			}
		})
	}
}
