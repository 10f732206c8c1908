package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
)

// TestEveryAttributeSaysWhatAChangeDoes: the registry docs promise, for
// every attribute a user sets, what a change does (update in place or
// replace) and its default.
func TestEveryAttributeSaysWhatAChangeDoes(t *testing.T) {
	ctx := context.Background()
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
