// Command docs-schema marks, in the provider schema that tfplugindocs reads
// (`terraform providers schema -json`, the file named by its argument,
// rewritten in place), the blocks that the provider requires by a
// validator. The plugin framework cannot declare a block required, so the
// protocol schema lists every block as optional and tfplugindocs would
// document a block that every configuration must have as "Optional". A
// block with an IsRequired validator gets min_items 1, which tfplugindocs
// renders as "Required" (a single block) or "Min: 1" (a list).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/setvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"

	"github.com/depctrl/terraform-provider-depctrl/provider"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: docs-schema <schema.json>")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "docs-schema:", err)
		os.Exit(1)
	}
}

func run(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := markRequired(data, requiredBlocks(context.Background()))
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}

// requiredBlocks lists, per resource type, the top-level blocks that carry
// an IsRequired validator.
func requiredBlocks(ctx context.Context) map[string][]string {
	objectRequired := objectvalidator.IsRequired().Description(ctx)
	listRequired := listvalidator.IsRequired().Description(ctx)
	setRequired := setvalidator.IsRequired().Description(ctx)
	out := map[string][]string{}
	for _, newResource := range provider.New("docs")().Resources(ctx) {
		r := newResource()
		meta := &resource.MetadataResponse{}
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "depctrl"}, meta)
		resp := &resource.SchemaResponse{}
		r.Schema(ctx, resource.SchemaRequest{}, resp)
		for name, b := range resp.Schema.Blocks {
			required := false
			switch v := b.(type) {
			case schema.SingleNestedBlock:
				for _, val := range v.Validators {
					required = required || val.Description(ctx) == objectRequired
				}
			case schema.ListNestedBlock:
				for _, val := range v.Validators {
					required = required || val.Description(ctx) == listRequired
				}
			case schema.SetNestedBlock:
				for _, val := range v.Validators {
					required = required || val.Description(ctx) == setRequired
				}
			}
			if required {
				out[meta.TypeName] = append(out[meta.TypeName], name)
			}
		}
	}
	return out
}

// markRequired sets min_items 1 on the named blocks of every provider in a
// `terraform providers schema -json` document, and fails when a block is
// missing, so that a renamed block cannot silently lose its mark.
func markRequired(data []byte, blocks map[string][]string) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	providers, _ := doc["provider_schemas"].(map[string]any)
	if len(providers) == 0 {
		return nil, fmt.Errorf("no provider_schemas in the schema")
	}
	for _, p := range providers {
		resources, _ := p.(map[string]any)["resource_schemas"].(map[string]any)
		for typ, names := range blocks {
			res, _ := resources[typ].(map[string]any)
			block, _ := res["block"].(map[string]any)
			types, _ := block["block_types"].(map[string]any)
			for _, name := range names {
				bt, ok := types[name].(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s has no block %q in the schema", typ, name)
				}
				bt["min_items"] = 1
			}
		}
	}
	return json.Marshal(doc)
}
