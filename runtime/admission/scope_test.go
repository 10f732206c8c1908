package admission

import (
	"fmt"
	"strings"
	"testing"
)

func TestURLRoundTrip(t *testing.T) {
	many := make([]string, MaxClusters+1)
	for i := range many {
		many[i] = fmt.Sprintf("c%02d", i)
	}
	tests := []struct {
		name     string
		endpoint string
		clusters []string
		wantURL  string
		want     Scope
	}{
		{"one", "https://wh:9443/validate", []string{"abc"}, "https://wh:9443/validate/clusters/abc", Scope{Named: true, Clusters: []string{"abc"}}},
		{"sorted and distinct", "https://wh:9443/mutate", []string{"b", "a", "b"}, "https://wh:9443/mutate/clusters/a,b", Scope{Named: true, Clusters: []string{"a", "b"}}},
		{"behind a path prefix", "https://ingress/depctrl/validate/", []string{"x1"}, "https://ingress/depctrl/validate/clusters/x1", Scope{Named: true, Clusters: []string{"x1"}}},
		{"too many name none", "https://wh/validate", many, "https://wh/validate", Unnamed},
		{"exactly the maximum", "https://wh/validate", many[:MaxClusters], "https://wh/validate/clusters/" + strings.Join(many[:MaxClusters], ","), Scope{Named: true, Clusters: many[:MaxClusters]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Of(tt.clusters...)
			url := s.URL(tt.endpoint)
			if url != tt.wantURL {
				t.Fatalf("URL = %q, want %q", url, tt.wantURL)
			}
			if got := Endpoint(url); got != strings.TrimSuffix(tt.endpoint, "/") && got != tt.endpoint {
				t.Errorf("Endpoint(%q) = %q, want %q", url, got, tt.endpoint)
			}
			path := url[strings.Index(url, "//")+2:]
			path = path[strings.Index(path, "/"):]
			got, err := Parse(path)
			if err != nil {
				t.Fatalf("Parse(%q): %v", path, err)
			}
			if got.Named != tt.want.Named || strings.Join(got.Clusters, ",") != strings.Join(tt.want.Clusters, ",") {
				t.Errorf("Parse(%q) = %+v, want %+v", path, got, tt.want)
			}
		})
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	tooMany := "/validate/clusters/" + strings.TrimSuffix(strings.Repeat("a,", MaxClusters+1), ",")
	for _, path := range []string{
		"/validate/clusters/",
		"/validate/clusters/a,,b",
		"/validate/clusters/UPPER",
		"/validate/clusters/a/b",
		"/validate/clusters/-a",
		tooMany,
	} {
		if s, err := Parse(path); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", path, s)
		}
	}
	for _, path := range []string{"/validate", "/mutate", "/"} {
		s, err := Parse(path)
		if err != nil || s.Named {
			t.Errorf("Parse(%q) = %+v, %v; want no clusters named and no error", path, s, err)
		}
	}
}
