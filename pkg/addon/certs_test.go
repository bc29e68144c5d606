package addon

import (
	"net/http"
	"net/url"
	"testing"
)

type recordTripper struct{ got *http.Request }

func (r *recordTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	r.got = req
	return &http.Response{StatusCode: http.StatusOK}, nil
}

func TestSecretByName(t *testing.T) {
	const path = "/api/v1/namespaces/ns/secrets"
	for _, tc := range []struct {
		name, method, url, wantSelector string
	}{
		{"list", http.MethodGet, path + "?limit=500", "metadata.name=cert"},
		{"watch", http.MethodGet, path + "?watch=true&resourceVersion=7", "metadata.name=cert"},
		{"list with a selector", http.MethodGet, path + "?fieldSelector=type%3Dopaque", "type=opaque,metadata.name=cert"},
		{"get by name", http.MethodGet, path + "/cert", ""},
		{"update by name", http.MethodPut, path + "/cert", ""},
		{"another namespace", http.MethodGet, "/api/v1/namespaces/other/secrets", ""},
		{"another resource", http.MethodGet, "/api/v1/namespaces/ns/configmaps", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordTripper{}
			req, err := http.NewRequest(tc.method, "https://apiserver"+tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			before := req.URL.String()
			if _, err := (secretByName{next: rec, path: path, name: "cert"}).RoundTrip(req); err != nil {
				t.Fatal(err)
			}
			if req.URL.String() != before {
				t.Errorf("the caller's request changed: %s, was %s", req.URL, before)
			}
			q, _ := url.ParseQuery(rec.got.URL.RawQuery)
			orig, _ := url.ParseQuery(req.URL.RawQuery)
			want := tc.wantSelector
			if want == "" {
				want = orig.Get("fieldSelector")
			}
			if got := q.Get("fieldSelector"); got != want {
				t.Errorf("fieldSelector %q, want %q", got, want)
			}
			for k := range orig {
				if k != "fieldSelector" && q.Get(k) != orig.Get(k) {
					t.Errorf("%s = %q, want %q kept", k, q.Get(k), orig.Get(k))
				}
			}
		})
	}
}
