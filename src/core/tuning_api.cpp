// The C interface to the tuning-table format (core/tuning.h), for the tools that make tables.
#include <mpi.h>

#include <memory>
#include <string>

#include "core/errors.h"
#include "core/tuning.h"
#include "tucoll.h"

struct tucoll_tuning_table {
    std::shared_ptr<tucoll::TuningTable> table;
    std::string text;  // the last string handed out
};

namespace {

int no_table(const char *fn) { return tucoll::failf(MPI_ERR_ARG, "%s: table is NULL", fn); }

}  // namespace

extern "C" int tucoll_tuning_table_parse(const char *collective, const char *text, const char *origin,
                                         tucoll_tuning_table_t **table) {
    if (collective == nullptr || text == nullptr || table == nullptr) {
        return tucoll::fail(MPI_ERR_ARG, "tucoll_tuning_table_parse: collective, text or result is NULL");
    }
    *table = nullptr;
    auto out = std::make_unique<tucoll_tuning_table>();
    TUCOLL_TRY(tucoll::TuningTable::parse(text, origin ? origin : "(text)", collective, &out->table));
    *table = out.release();
    return MPI_SUCCESS;
}

extern "C" void tucoll_tuning_table_free(tucoll_tuning_table_t *table) { delete table; }

extern "C" int tucoll_tuning_table_check(const tucoll_tuning_table_t *table) {
    if (table == nullptr) return no_table("tucoll_tuning_table_check");
    return table->table->check_specs();
}

extern "C" const char *tucoll_tuning_table_json(tucoll_tuning_table_t *table) {
    if (table == nullptr) return nullptr;
    table->text = table->table->to_json();
    return table->text.c_str();
}

extern "C" const char *tucoll_tuning_table_entry(tucoll_tuning_table_t *table, int nprocs, int ppn) {
    if (table == nullptr) return nullptr;
    const tucoll::TuningTable::Entry *entry = table->table->entry_for(nprocs, ppn);
    if (entry == nullptr) return nullptr;
    table->text = tucoll::TuningTable::entry_json(*entry);
    return table->text.c_str();
}

extern "C" int tucoll_tuning_table_lookup(tucoll_tuning_table_t *table, int nprocs, int ppn, const double *values,
                                          int nvalues, const char **spec) {
    constexpr const char *fn = "tucoll_tuning_table_lookup";
    if (table == nullptr) return no_table(fn);
    if (spec == nullptr || (values == nullptr && nvalues > 0)) return tucoll::failf(MPI_ERR_ARG, "%s: NULL argument", fn);
    const tucoll::TuningTable &t = *table->table;
    if (nvalues < 0 || static_cast<size_t>(nvalues) != t.features().size()) {
        return tucoll::failf(MPI_ERR_ARG, "%s: %d values for a table of %zu features", fn, nvalues, t.features().size());
    }
    const tucoll::TuningTable::Entry *entry = t.entry_for(nprocs, ppn);
    if (entry == nullptr) return tucoll::failf(MPI_ERR_ARG, "%s: the table has no entries", fn);
    table->text = tucoll::TuningTable::spec_for(*entry, std::vector<double>(values, values + nvalues));
    *spec = table->text.c_str();
    return MPI_SUCCESS;
}

extern "C" int tucoll_tuning_table_reduces(tucoll_tuning_table_t *table, int nprocs, int ppn, int *reduces) {
    constexpr const char *fn = "tucoll_tuning_table_reduces";
    if (table == nullptr) return no_table(fn);
    if (reduces == nullptr) return tucoll::failf(MPI_ERR_ARG, "%s: NULL argument", fn);
    const tucoll::TuningTable::Entry *entry = table->table->entry_for(nprocs, ppn);
    if (entry == nullptr) return tucoll::failf(MPI_ERR_ARG, "%s: the table has no entries", fn);
    *reduces = tucoll::TuningTable::only_spec(*entry) == nullptr ? 1 : 0;
    return MPI_SUCCESS;
}

extern "C" int tucoll_tuning_table_merge(tucoll_tuning_table_t *table, const tucoll_tuning_table_t *online,
                                         const char *origin, int *added) {
    constexpr const char *fn = "tucoll_tuning_table_merge";
    if (table == nullptr || online == nullptr) return no_table(fn);
    int count = 0;
    TUCOLL_TRY(table->table->merge(*online->table, origin ? origin : online->table->origin(), &count));
    if (added != nullptr) *added = count;
    return MPI_SUCCESS;
}
