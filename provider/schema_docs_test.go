package provider

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		10 * time.Minute:                "10m",
		time.Minute:                     "1m",
		20 * time.Minute:                "20m",
		45 * time.Second:                "45s",
		90 * time.Second:                "1m30s",
		time.Hour:                       "1h",
		time.Hour + 30*time.Minute:      "1h30m",
		2*time.Hour + 10*time.Second:    "2h0m10s",
		500 * time.Millisecond:          "500ms",
		10*time.Minute + 10*time.Second: "10m10s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestEveryAttributeSaysWhatAChangeDoes: the registry docs promise, for
// every attribute a user sets, what a change does (update in place or
// replace) and its default; a timeout's default is a duration Terraform
// accepts (not "1", as 10m once came out).
func TestEveryAttributeSaysWhatAChangeDoes(t *testing.T) {
	ctx := context.Background()
	defaultValue := regexp.MustCompile("Default `([^`]*)`")
	p := New("test")()
	for _, newResource := range p.Resources(ctx) {
		r := newResource()
		meta := &resource.MetadataResponse{}
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "depctrl"}, meta)
		resp := &resource.SchemaResponse{}
		r.Schema(ctx, resource.SchemaRequest{}, resp)
		check := func(path string, desc string, configurable, hasDefault bool) {
			if !configurable {
				return
			}
			low := strings.ToLower(desc)
			if desc == "" {
				t.Errorf("%s.%s has no description", meta.TypeName, path)
			}
			if !strings.Contains(low, "replace") && !strings.Contains(low, "in place") && !strings.Contains(low, "only changes the state") {
				t.Errorf("%s.%s does not say what a change does: %q", meta.TypeName, path, desc)
			}
			if hasDefault && !strings.Contains(low, "default") {
				t.Errorf("%s.%s does not say its default: %q", meta.TypeName, path, desc)
			}
			if strings.HasPrefix(path, "timeouts.") {
				m := defaultValue.FindStringSubmatch(desc)
				if m == nil {
					t.Errorf("%s.%s does not say its default: %q", meta.TypeName, path, desc)
				} else if d, err := time.ParseDuration(m[1]); err != nil || d < time.Second {
					t.Errorf("%s.%s gives the default %q, not a duration of a second or more", meta.TypeName, path, m[1])
				}
			}
		}
		var walk func(prefix string, attrs map[string]schema.Attribute, blocks map[string]schema.Block)
		walk = func(prefix string, attrs map[string]schema.Attribute, blocks map[string]schema.Block) {
			for name, a := range attrs {
				configurable := a.IsOptional() || a.IsRequired()
				switch v := a.(type) {
				case schema.SingleNestedAttribute:
					walk(prefix+name+".", v.Attributes, nil)
					continue
				case schema.ListNestedAttribute:
					walk(prefix+name+".", v.NestedObject.Attributes, nil)
					continue
				case schema.StringAttribute:
					check(prefix+name, v.MarkdownDescription, configurable, v.Default != nil)
				case schema.BoolAttribute:
					check(prefix+name, v.MarkdownDescription, configurable, v.Default != nil)
				case schema.Int64Attribute:
					check(prefix+name, v.MarkdownDescription, configurable, v.Default != nil)
				default:
					check(prefix+name, a.GetMarkdownDescription(), configurable, false)
				}
			}
			for name, b := range blocks {
				switch v := b.(type) {
				case schema.ListNestedBlock:
					walk(prefix+name+".", v.NestedObject.Attributes, v.NestedObject.Blocks)
				case schema.SingleNestedBlock:
					walk(prefix+name+".", v.Attributes, v.Blocks)
				}
			}
		}
		walk("", resp.Schema.Attributes, resp.Schema.Blocks)
	}
}
