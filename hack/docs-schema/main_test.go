package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestRequiredBlocks: the blocks every DependencyRule must have are found
// from their validators, and no optional block is.
func TestRequiredBlocks(t *testing.T) {
	got := requiredBlocks(context.Background())
	rule := got["depctrl_dependency_rule"]
	slices.Sort(rule)
	if !slices.Equal(rule, []string{"dependency", "dependent"}) {
		t.Errorf("required blocks of depctrl_dependency_rule = %v, want [dependency dependent]", rule)
	}
	for typ, names := range got {
		if slices.Contains(names, "timeouts") {
			t.Errorf("%s: timeouts marked required", typ)
		}
	}
}

func TestMarkRequired(t *testing.T) {
	in := `{"format_version":"1.0","provider_schemas":{"registry.terraform.io/hashicorp/depctrl":{"resource_schemas":{"depctrl_dependency_rule":{"version":0,"block":{"block_types":{` +
		`"dependent":{"nesting_mode":"single","block":{}},"timeouts":{"nesting_mode":"single","block":{}}}}}}}}}`
	out, err := markRequired([]byte(in), map[string][]string{"depctrl_dependency_rule": {"dependent"}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ProviderSchemas map[string]struct {
			ResourceSchemas map[string]struct {
				Block struct {
					BlockTypes map[string]struct {
						MinItems int `json:"min_items"`
					} `json:"block_types"`
				} `json:"block"`
			} `json:"resource_schemas"`
		} `json:"provider_schemas"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	bt := doc.ProviderSchemas["registry.terraform.io/hashicorp/depctrl"].ResourceSchemas["depctrl_dependency_rule"].Block.BlockTypes
	if bt["dependent"].MinItems != 1 || bt["timeouts"].MinItems != 0 {
		t.Errorf("min_items: dependent %d, timeouts %d; want 1, 0", bt["dependent"].MinItems, bt["timeouts"].MinItems)
	}
	if _, err := markRequired([]byte(in), map[string][]string{"depctrl_dependency_rule": {"dependents"}}); err == nil {
		t.Error("a block missing from the schema was not reported")
	}
}
