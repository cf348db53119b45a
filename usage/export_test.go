package usage

// LedgerCost prices t as the ledger does (through its index).
func LedgerCost(p Prices, provider, model string, t Tokens) *float64 {
	return indexPrices(p).cost(provider, model, t)
}
