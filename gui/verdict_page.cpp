#include "gui/verdict_page.hpp"

#include <QHeaderView>
#include <QLabel>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "gui/display_text.hpp"

namespace gparity::gui {
namespace {

QString severity_text(diff::Severity s) {
  return QString::fromUtf8(diff::severity_name(s).data(),
                           static_cast<qsizetype>(diff::severity_name(s).size()));
}

QColor severity_color(diff::Severity s) {
  switch (s) {
    case diff::Severity::Divergence: return {255, 205, 210};
    case diff::Severity::Incomplete: return {255, 224, 178};
    case diff::Severity::Error: return {239, 154, 154};
    case diff::Severity::Warning: return {255, 249, 196};
    case diff::Severity::Info: break;
  }
  return {};
}

}  // namespace

QColor cell_state_color(CellState s) {
  switch (s) {
    case CellState::Equal: return {76, 175, 80};
    case CellState::FirstDivergence: return {198, 40, 40};
    case CellState::Diverged: return {239, 130, 120};
    case CellState::Origin: return {198, 40, 40};
    case CellState::Propagated: return {255, 167, 38};
    case CellState::Received: return {171, 130, 255};
    case CellState::Missing: return {120, 120, 120};
    case CellState::NotCompared: return {225, 225, 225};
  }
  return {};
}

// ---- VerdictGridModel ----

void VerdictGridModel::set_verdict(std::shared_ptr<const JobVerdict> v) {
  beginResetModel();
  v_ = std::move(v);
  endResetModel();
}

int VerdictGridModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !v_ ? 0 : static_cast<int>(v_->grid.rows.size());
}

int VerdictGridModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() || !v_ ? 0 : static_cast<int>(v_->grid.columns.size());
}

QVariant VerdictGridModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto r = static_cast<std::size_t>(index.row());
  const auto c = static_cast<std::size_t>(index.column());
  const CellState s = v_->grid.at(r, c);
  switch (role) {
    case Qt::DisplayRole: return QString::fromLatin1(cell_state_name(s));
    case Qt::ToolTipRole: return shown_text(v_->tooltip(r, c));
    case Qt::BackgroundRole: return cell_state_color(s);
    case kCellStateRole: return static_cast<int>(s);
    default: return {};
  }
}

QVariant VerdictGridModel::headerData(int section, Qt::Orientation o, int role) const {
  if (role != Qt::DisplayRole || !v_ || section < 0) return {};
  const auto& names = o == Qt::Vertical ? v_->grid.rows : v_->grid.columns;
  return section < static_cast<int>(names.size())
             ? QVariant(shown_text(names[static_cast<std::size_t>(section)]))
             : QVariant();
}

// ---- VerdictFindingsModel ----

void VerdictFindingsModel::set_verdict(std::shared_ptr<const JobVerdict> v) {
  beginResetModel();
  v_ = std::move(v);
  rows_.clear();
  if (v_)
    for (std::size_t i = 0; i < v_->findings.size(); ++i)
      if (v_->findings[i].severity >= diff::Severity::Warning) rows_.push_back(i);
  endResetModel();
}

int VerdictFindingsModel::row_of(std::size_t finding) const {
  const auto it = std::find(rows_.begin(), rows_.end(), finding);
  return it == rows_.end() ? -1 : static_cast<int>(it - rows_.begin());
}

int VerdictFindingsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int VerdictFindingsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant VerdictFindingsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto i = rows_[static_cast<std::size_t>(index.row())];
  const auto& f = v_->findings[i];
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case Severity: return severity_text(f.severity);
        case Where: return shown_text(v_->where_text(f));
        case Message: return shown_text(f.message);
        default: return {};
      }
    case Qt::ToolTipRole: return shown_text(v_->where_text(f) + ": " + f.message);
    case Qt::BackgroundRole: {
      const QColor c = severity_color(f.severity);
      return c.isValid() ? QVariant(c) : QVariant();
    }
    case kFindingIndexRole: return static_cast<qulonglong>(i);
    default: return {};
  }
}

QVariant VerdictFindingsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole)
    return QAbstractTableModel::headerData(section, o, role);
  static const char* const kNames[] = {"severity", "where", "finding"};
  return section >= 0 && section < ColumnCount ? QVariant(QString::fromLatin1(kNames[section])) : QVariant();
}

// ---- VerdictPage ----

VerdictPage::VerdictPage(QWidget* parent)
    : QWidget(parent),
      grid_model_(std::make_unique<VerdictGridModel>()),
      findings_model_(std::make_unique<VerdictFindingsModel>()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(8, 8, 8, 8);
  headline_ = new QLabel(this);
  headline_->setWordWrap(true);
  headline_->setTextFormat(Qt::PlainText);
  QFont big = headline_->font();
  big.setPointSizeF(big.pointSizeF() * 1.3);
  big.setBold(true);
  headline_->setFont(big);
  headline_->setAutoFillBackground(true);
  headline_->setMargin(6);
  layout->addWidget(headline_);
  paths_ = new QLabel(this);
  paths_->setTextFormat(Qt::PlainText);
  layout->addWidget(paths_);
  summary_ = new QLabel(this);
  summary_->setTextFormat(Qt::PlainText);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(summary_);
  first_ = new QLabel(this);
  first_->setTextFormat(Qt::PlainText);  // one line, elided; the whole finding on hover
  layout->addWidget(first_);
  auto* split = new QSplitter(Qt::Vertical, this);
  grid_ = new VerdictGridView(split);
  findings_view_ = new QTableView(split);
  findings_view_->setModel(findings_model_.get());
  findings_view_->setSelectionBehavior(QAbstractItemView::SelectRows);
  findings_view_->setSelectionMode(QAbstractItemView::SingleSelection);
  findings_view_->verticalHeader()->hide();
  findings_view_->verticalHeader()->setDefaultSectionSize(20);
  findings_view_->horizontalHeader()->setStretchLastSection(true);
  findings_view_->setWordWrap(false);
  split->addWidget(grid_);
  split->addWidget(findings_view_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
  grid_->on_cell_clicked = [this](std::size_t r, std::size_t c) { follow_cell(r, c); };
  connect(findings_view_->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (current.isValid()) follow_finding(current.row());
          });
  clear(tr("Open runs, checkpoints, Flight Recorder dumps or op logs to see their verdict"));
}

void VerdictPage::clear(const QString& message) {
  v_.reset();
  grid_model_->set_verdict(nullptr);
  findings_model_->set_verdict(nullptr);
  grid_->set_verdict(nullptr);
  headline_->setText(message);
  headline_->setPalette(palette());
  paths_->clear();
  summary_->clear();
  first_->clear();
}

void VerdictPage::set_verdict(std::shared_ptr<const JobVerdict> v) {
  v_ = std::move(v);
  grid_model_->set_verdict(v_);
  findings_model_->set_verdict(v_);
  grid_->set_verdict(v_);
  if (!v_) return;
  const auto& verdict = v_->verdict;
  headline_->setText(shown_text(verdict.headline));
  QPalette pal = headline_->palette();
  pal.setColor(QPalette::Window, verdict.exit_code == 0   ? QColor(200, 230, 201)
                                 : verdict.exit_code == 1 ? QColor(255, 205, 210)
                                                          : QColor(255, 224, 178));
  headline_->setPalette(pal);
  // Paths relative to what was opened; the full paths on hover.
  QStringList shown, full;
  static const char* const kSides[] = {"baseline", "candidate"};
  for (std::size_t i = 0; i < v_->paths.size(); ++i) {
    const QString side =
        v_->paths.size() == 2 ? QString::fromLatin1(kSides[i]) + QStringLiteral(": ") : QString();
    shown << side + shown_text(shown_path(v_->paths[i], v_->paths));
    full << side + shown_text(v_->paths[i]);
  }
  paths_->setText(QStringLiteral("%1 (%2) · %3")
                      .arg(shown_text(v_->command), QString::fromLatin1(kind_name(v_->kind)),
                           shown.join(QStringLiteral(" · "))));
  paths_->setToolTip(full.join(QLatin1Char('\n')));
  QStringList lines;
  for (const auto& s : verdict.summary) lines << shown_text(s);
  int passed = 0, failed = 0, errors = 0, skipped = 0;
  for (const auto& c : v_->checks) {
    passed += c.outcome == diff::Check::Outcome::Pass;
    failed += c.outcome == diff::Check::Outcome::Fail;
    errors += c.outcome == diff::Check::Outcome::Error;
    skipped += c.outcome == diff::Check::Outcome::Skipped;
  }
  lines << tr("checks: %1 passed, %2 failed, %3 errors, %4 skipped")
               .arg(passed)
               .arg(failed)
               .arg(errors)
               .arg(skipped);
  summary_->setText(lines.join(QLatin1Char('\n')));
  const QString first = first_divergence();
  const QString first_line =
      first.isEmpty() ? tr("No divergence and no missing evidence.") : tr("First: %1").arg(first);
  first_->setText(first_->fontMetrics().elidedText(first_line, Qt::ElideRight, std::max(400, width() - 24)));
  first_->setToolTip(first_line);
  findings_view_->resizeColumnToContents(VerdictFindingsModel::Severity);
  findings_view_->setColumnWidth(VerdictFindingsModel::Where, 260);
  // Open on the first cause: its cell selected in the grid.
  grid_->fit_all();
  if (grid_->cell_size() < 8) grid_->set_cell_size(8);
  if (v_->first_cause)
    if (const auto cell = v_->cell_of(v_->cause_of(v_->findings[*v_->first_cause])))
      grid_->select_cell(cell->first, cell->second);
}

QString VerdictPage::headline() const {
  return headline_->text();
}

QString VerdictPage::first_divergence() const {
  if (!v_ || !v_->first_cause) return {};
  const auto& f = v_->findings[*v_->first_cause];
  return shown_text(v_->where_text(f) + ": " + f.message);
}

bool VerdictPage::follow_cell(std::size_t row, std::size_t column) {
  if (!v_ || row >= v_->grid.rows.size() || column >= v_->grid.columns.size()) return false;
  grid_->select_cell(row, column);
  return on_cause ? on_cause(v_->cause_at(row, column)) : false;
}

bool VerdictPage::follow_finding(int row) {
  if (!v_ || row < 0 || row >= findings_model_->rowCount()) return false;
  const auto& f = v_->findings[findings_model_->finding_index(row)];
  const CauseRef cause = v_->cause_of(f);
  if (const auto cell = v_->cell_of(cause)) grid_->select_cell(cell->first, cell->second);
  if (findings_view_->currentIndex().row() != row) {
    const QSignalBlocker quiet(findings_view_->selectionModel());  // no second follow
    findings_view_->setCurrentIndex(findings_model_->index(row, 0));
    findings_view_->viewport()->update();
  }
  return on_cause ? on_cause(cause) : false;
}

}  // namespace gparity::gui
