package agentctx

import (
	"fmt"
	"slices"
	"sync"
)

// maxVariants bounds the variants a Pipeline keeps: a host switches among a few models, and
// a variant evicted is built again when a turn names it (its memos of counts, encodings and
// chains are the Pipeline's, and stay).
const maxVariants = 8

// variantKey names a variant: the model, window and maximum output a turn asked for.
type variantKey struct {
	model             string
	window, maxOutput int
}

// variants are the Pipelines a Pipeline built for turns that name another model, window or
// maximum output ([Input.Model]), the most recently used last.
type variants struct {
	mu   sync.Mutex
	keys []variantKey
	ps   []*Pipeline
}

// forTurn returns the Pipeline that serves in: p itself, or the variant for the model, window
// and maximum output in names, with those fields of in cleared. A variant is built from p's
// Config with Model, ContextWindow and MaxOutputTokens replaced, so it validates as New does.
func (p *Pipeline) forTurn(in *Input) (*Pipeline, error) {
	if in.Model == "" && in.ContextWindow == 0 && in.MaxOutputTokens == 0 {
		return p, nil
	}
	if in.ContextWindow < 0 || in.MaxOutputTokens < 0 {
		return nil, fmt.Errorf("agentctx: Input.ContextWindow %d or MaxOutputTokens %d is negative", in.ContextWindow, in.MaxOutputTokens)
	}
	cfg := p.cfg
	if in.Model != "" && in.Model != cfg.Model {
		cfg.Model, cfg.ContextWindow, cfg.MaxOutputTokens = in.Model, 0, 0
	}
	if in.ContextWindow > 0 {
		cfg.ContextWindow = in.ContextWindow
	}
	if in.MaxOutputTokens > 0 {
		cfg.MaxOutputTokens = in.MaxOutputTokens
	}
	in.Model, in.ContextWindow, in.MaxOutputTokens = "", 0, 0
	if cfg.Model == p.cfg.Model && cfg.ContextWindow == p.cfg.ContextWindow && cfg.MaxOutputTokens == p.cfg.MaxOutputTokens {
		return p, nil
	}
	return p.variants.get(variantKey{cfg.Model, cfg.ContextWindow, cfg.MaxOutputTokens}, func() (*Pipeline, error) {
		q, err := newPipeline(cfg, p)
		if err != nil {
			return nil, fmt.Errorf("agentctx: the turn's model %q, window %d, max output %d: %w", cfg.Model, cfg.ContextWindow, cfg.MaxOutputTokens, err)
		}
		return q, nil
	})
}

// get returns the variant of k, building it with build when there is none.
func (v *variants) get(k variantKey, build func() (*Pipeline, error)) (*Pipeline, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if i := slices.Index(v.keys, k); i >= 0 {
		p := v.ps[i]
		v.keys = append(slices.Delete(v.keys, i, i+1), k)
		v.ps = append(slices.Delete(v.ps, i, i+1), p)
		return p, nil
	}
	p, err := build()
	if err != nil {
		return nil, err
	}
	if len(v.keys) == maxVariants {
		v.keys, v.ps = slices.Delete(v.keys, 0, 1), slices.Delete(v.ps, 0, 1)
	}
	v.keys, v.ps = append(v.keys, k), append(v.ps, p)
	return p, nil
}
