package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// A model pulled through /api/pull as hf.co/ORG/REPO:QUANT answers to that name afterwards, as it
// does in Ollama: /api/show, /api/chat and /api/delete take it (Ollama's clients use the name they
// pulled), and so does the same name with ":latest" for the default quant's spelling.
func TestOllamaPulledNameResolves(t *testing.T) {
	srv, _, _, _ := hubRouter(t, false)
	name := "hf.co/" + hubRepo + ":Q4_K_M"
	resp, b := postJSON(t, srv.URL+"/api/pull", `{"model":"`+name+`","stream":false}`)
	if resp.StatusCode != 200 || string(b) != `{"status":"success"}`+"\n" {
		t.Fatalf("pull %d %s", resp.StatusCode, b)
	}
	if _, tags := getBody(t, srv.URL+"/api/tags"); !strings.Contains(string(tags), `"name":"`+name+`"`) {
		t.Errorf("tags list the pull under another name: %s", tags) // LangChain's checkOrPullModel looks for the pulled name
	}
	for _, n := range []string{name, "HF.co/" + hubRepo + ":Q4_K_M", "https://huggingface.co/" + hubRepo + ":Q4_K_M"} {
		if resp, b := postJSON(t, srv.URL+"/api/show", `{"model":"`+n+`"}`); resp.StatusCode != 200 || !strings.Contains(string(b), `"format":"gguf"`) {
			t.Errorf("show %s: %d %s", n, resp.StatusCode, b)
		}
	}
	if resp, b := postJSON(t, srv.URL+"/api/show", `{"model":"hf.co/Org/Other-GGUF:Q4_K_M"}`); resp.StatusCode != 404 ||
		string(b) != `{"error":"model 'hf.co/Org/Other-GGUF:Q4_K_M' not found"}`+"\n" { // Ollama's words for /api/show
		t.Errorf("show of a name not pulled: %d %s", resp.StatusCode, b)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+"/api/delete", strings.NewReader(`{"name":"`+name+`"}`))
	dr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	dr.Body.Close()
	if dr.StatusCode != 200 {
		t.Fatalf("delete %s: %d", name, dr.StatusCode)
	}
	if resp, b := postJSON(t, srv.URL+"/api/show", `{"model":"`+name+`"}`); resp.StatusCode != 404 {
		t.Errorf("show after delete: %d %s", resp.StatusCode, b)
	}
}
