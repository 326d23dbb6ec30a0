package ghreleases

import (
	"testing"

	"github.com/llamatray/llamatray/router/testbed"
)

// FakeTarGz is release tag's Linux/macOS archive of the test bed's fake llama-server; the test
// fails when it cannot be packed.
func FakeTarGz(t testing.TB, tag string) []byte {
	t.Helper()
	b, err := FromBinary(testbed.FakeLlamaServer(t))
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := b.TarGz(tag)
	if err != nil {
		t.Fatal(err)
	}
	return tgz
}
