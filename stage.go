package agentctx

// stage is one step of the view: it reads and rewrites the turn's items and reports what it
// did in the turn's Report. Each is a small value built once by [New], holding only the
// configuration, counter and memos it uses; [Pipeline.build] runs them in order.
type stage interface {
	// name is the stage's name in the Report and in a [StageError].
	name() string
	// run applies the stage to t.
	run(t *turn) error
}

// stages are a pipeline's stages, by name, for the turn and for a compaction's view.
type stages struct {
	budget       *budgetStage
	snip         *snipStage
	microcompact *microcompactStage
	collapse     *collapseStage
	context      *contextStage
	normalize    *normalizeStage
	cache        *cacheStage
}

// newStages builds the stages of a pipeline of cfg whose window is window, whose counter is
// counter, whose model's minimum cacheable prefix is minCache and whose memos budget bounds.
func newStages(cfg *Config, window int, counter *Counter, minCache int, budget *memoBudget) stages {
	prefixes := &normPrefixes{}
	prefixes.SetLimit(convLimit(cfg.Conversations))
	prefixes.SetBytes(budget.prefixes)
	return stages{
		budget:       &budgetStage{cfg: cfg.Budget, counter: counter, window: window},
		snip:         &snipStage{cfg: cfg.Snip, counter: counter, window: window},
		microcompact: &microcompactStage{cfg: cfg.Microcompact, cache: cfg.Cache, counter: counter, window: window},
		collapse:     &collapseStage{cfg: cfg.Collapse, counter: counter},
		context:      &contextStage{cfg: cfg.Context, counter: counter},
		normalize:    &normalizeStage{cfg: cfg.Normalize, thinking: cfg.Thinking, counter: counter, clean: newCleanMemo(budget), prefixes: prefixes},
		cache:        &cacheStage{cfg: cfg.Cache, counter: counter, minCache: minCache},
	}
}

// order lists the stages in the order a turn runs them.
func (s *stages) order() []stage {
	return []stage{s.budget, s.snip, s.microcompact, s.collapse, s.context, s.normalize, s.cache}
}
