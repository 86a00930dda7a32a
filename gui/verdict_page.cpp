#include "gui/verdict_page.hpp"

#include <QHeaderView>
#include <QHelpEvent>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableView>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>
#include <array>
#include <cmath>

#include "gui/display_text.hpp"
#include "gui/legend.hpp"

namespace gparity::gui {
namespace {

constexpr int kLegendTop = 2;
constexpr int kColumnLabels = 130;  // room for rotated column labels

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

std::vector<LegendEntry> legend_for(const JobVerdict& v) {
  // The states this kind of grid can hold: causes (origin, ...) only where the evidence gives them.
  using S = CellState;
  const std::vector<S> states =
      v.kind == JobVerdict::Kind::Ops || v.kind == JobVerdict::Kind::Replay
          ? std::vector<S>{S::Equal,    S::Origin,  S::Propagated, S::Received,
                           S::Diverged, S::Missing, S::NotCompared}
          : std::vector<S>{S::Equal, S::FirstDivergence, S::Diverged, S::Missing, S::NotCompared};
  std::vector<LegendEntry> out;
  for (const auto state : states) {
    LegendEntry e{cell_state_color(state), QString::fromLatin1(cell_state_name(state))};
    if (state == S::FirstDivergence || state == S::Origin) e.frame = QPen(Qt::black, 2);
    out.push_back(e);
  }
  out.push_back(
      {QColor(255, 255, 255), QStringLiteral("selected"), QString(), QPen(QColor(30, 100, 230), 3)});
  return out;
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

// ---- VerdictGridView ----

VerdictGridView::VerdictGridView(QWidget* parent) : QAbstractScrollArea(parent) {
  viewport()->setMouseTracking(true);
  viewport()->setAttribute(Qt::WA_OpaquePaintEvent);
}

QSize VerdictGridView::sizeHint() const {
  return {900, 420};
}

int VerdictGridView::top_margin() const {
  return kLegendTop + 2 * (fontMetrics().height() + 6) + kColumnLabels;
}

void VerdictGridView::set_verdict(std::shared_ptr<const JobVerdict> v) {
  v_ = std::move(v);
  selected_.reset();
  image_ = QImage();
  if (v_ && !v_->grid.rows.empty() && !v_->grid.columns.empty()) {
    const auto& g = v_->grid;
    image_ =
        QImage(static_cast<int>(g.columns.size()), static_cast<int>(g.rows.size()), QImage::Format_RGB32);
    std::array<QRgb, kCellStateCount> rgb{};
    for (int s = 0; s < kCellStateCount; ++s)
      rgb[static_cast<std::size_t>(s)] = cell_state_color(static_cast<CellState>(s)).rgb();
    for (std::size_t r = 0; r < g.rows.size(); ++r) {
      auto* line = reinterpret_cast<QRgb*>(image_.scanLine(static_cast<int>(r)));
      for (std::size_t c = 0; c < g.columns.size(); ++c) line[c] = rgb[static_cast<std::size_t>(g.at(r, c))];
    }
    // Row labels as wide as the longest one needs (up to a third of the view).
    int w = 60;
    for (std::size_t r = 0; r < std::min<std::size_t>(g.rows.size(), 2000); ++r)
      w = std::max(w, fontMetrics().horizontalAdvance(shown_text(g.rows[r])) + 12);
    w = std::max(w, fontMetrics().horizontalAdvance(QStringLiteral("%1 \\ %2")
                                                        .arg(QString::fromStdString(g.row_title),
                                                             QString::fromStdString(g.column_title))) +
                        12);
    left_ = std::min(w, 320);
  }
  update_scrollbars();
  viewport()->update();
}

void VerdictGridView::set_cell_size(double px) {
  cell_ = std::clamp(px, 1.0, 48.0);
  update_scrollbars();
  viewport()->update();
}

void VerdictGridView::zoom_by(double factor) {
  set_cell_size(cell_ * factor);
}

void VerdictGridView::fit_all() {
  if (!v_ || v_->grid.rows.empty() || v_->grid.columns.empty()) return;
  const double w = (viewport()->width() - left_ - 4) / static_cast<double>(v_->grid.columns.size());
  const double h = (viewport()->height() - top_margin() - 4) / static_cast<double>(v_->grid.rows.size());
  set_cell_size(std::min({w, h, 32.0}));
}

void VerdictGridView::pan_by(int dx, int dy) {
  horizontalScrollBar()->setValue(horizontalScrollBar()->value() + dx);
  verticalScrollBar()->setValue(verticalScrollBar()->value() + dy);
}

void VerdictGridView::update_scrollbars() {
  if (!v_) {
    horizontalScrollBar()->setRange(0, 0);
    verticalScrollBar()->setRange(0, 0);
    return;
  }
  const int content_w = static_cast<int>(std::ceil(static_cast<double>(v_->grid.columns.size()) * cell_));
  const int content_h = static_cast<int>(std::ceil(static_cast<double>(v_->grid.rows.size()) * cell_));
  const int view_w = std::max(0, viewport()->width() - left_);
  const int view_h = std::max(0, viewport()->height() - top_margin());
  horizontalScrollBar()->setRange(0, std::max(0, content_w - view_w));
  verticalScrollBar()->setRange(0, std::max(0, content_h - view_h));
  horizontalScrollBar()->setPageStep(std::max(1, view_w));
  verticalScrollBar()->setPageStep(std::max(1, view_h));
  horizontalScrollBar()->setSingleStep(std::max(1, static_cast<int>(cell_)));
  verticalScrollBar()->setSingleStep(std::max(1, static_cast<int>(cell_)));
}

void VerdictGridView::resizeEvent(QResizeEvent* event) {
  QAbstractScrollArea::resizeEvent(event);
  update_scrollbars();
}

void VerdictGridView::scrollContentsBy(int, int) {
  viewport()->update();
}

QRect VerdictGridView::cell_rect(std::size_t row, std::size_t column) const {
  const double x = left_ + static_cast<double>(column) * cell_ - horizontalScrollBar()->value();
  const double y = top_margin() + static_cast<double>(row) * cell_ - verticalScrollBar()->value();
  return QRectF(x, y, cell_, cell_).toAlignedRect();
}

std::optional<std::pair<std::size_t, std::size_t>> VerdictGridView::cell_at(QPoint p) const {
  if (!v_ || p.x() < left_ || p.y() < top_margin()) return std::nullopt;
  const double c = (p.x() - left_ + horizontalScrollBar()->value()) / cell_;
  const double r = (p.y() - top_margin() + verticalScrollBar()->value()) / cell_;
  if (c < 0 || r < 0 || c >= static_cast<double>(v_->grid.columns.size()) ||
      r >= static_cast<double>(v_->grid.rows.size()))
    return std::nullopt;
  return std::pair{static_cast<std::size_t>(r), static_cast<std::size_t>(c)};
}

void VerdictGridView::select_cell(std::size_t row, std::size_t column) {
  selected_ = std::pair{row, column};
  // Scroll it into view, with some room around it.
  const QRect r = cell_rect(row, column);
  const QRect area(left_, top_margin(), viewport()->width() - left_, viewport()->height() - top_margin());
  if (!area.contains(r)) {
    horizontalScrollBar()->setValue(static_cast<int>(static_cast<double>(column) * cell_) - area.width() / 3);
    verticalScrollBar()->setValue(static_cast<int>(static_cast<double>(row) * cell_) - area.height() / 3);
  }
  viewport()->update();
}

bool VerdictGridView::viewportEvent(QEvent* event) {
  if (event->type() == QEvent::ToolTip && v_) {
    auto* help = static_cast<QHelpEvent*>(event);
    if (const auto cell = cell_at(help->pos()))
      QToolTip::showText(help->globalPos(), shown_text(v_->tooltip(cell->first, cell->second)), viewport(),
                         cell_rect(cell->first, cell->second));
    else
      QToolTip::hideText();
    return true;
  }
  return QAbstractScrollArea::viewportEvent(event);
}

void VerdictGridView::mousePressEvent(QMouseEvent* event) {
  const auto cell = cell_at(event->position().toPoint());
  if (!cell) return;
  select_cell(cell->first, cell->second);
  if (on_cell_clicked) on_cell_clicked(cell->first, cell->second);
}

void VerdictGridView::wheelEvent(QWheelEvent* event) {
  if (event->modifiers() & Qt::ControlModifier) {
    zoom_by(event->angleDelta().y() > 0 ? 1.25 : 0.8);
    return;
  }
  QAbstractScrollArea::wheelEvent(event);
}

void VerdictGridView::paintEvent(QPaintEvent*) {
  QPainter p(viewport());
  p.fillRect(viewport()->rect(), Qt::white);
  if (!v_ || image_.isNull()) {
    p.drawText(viewport()->rect(), Qt::AlignCenter, tr("Nothing to show"));
    return;
  }
  const auto& g = v_->grid;
  const int top = top_margin();
  const int hs = horizontalScrollBar()->value();
  const int vs = verticalScrollBar()->value();
  const int vw = viewport()->width();
  const int vh = viewport()->height();
  const auto cols = g.columns.size();
  const auto rows = g.rows.size();
  const auto c0 = static_cast<std::size_t>(std::max(0.0, std::floor(hs / cell_)));
  const auto r0 = static_cast<std::size_t>(std::max(0.0, std::floor(vs / cell_)));
  const auto c1 = std::min(cols, static_cast<std::size_t>(std::ceil((hs + vw - left_) / cell_)) + 1);
  const auto r1 = std::min(rows, static_cast<std::size_t>(std::ceil((vs + vh - top) / cell_)) + 1);
  const QRect area(left_, top, vw - left_, vh - top);
  p.save();
  p.setClipRect(area);
  if (c0 < c1 && r0 < r1) {
    // Cells: the visible part of the one-pixel-a-cell image, scaled without smoothing.
    const QRectF source(static_cast<double>(c0), static_cast<double>(r0), static_cast<double>(c1 - c0),
                        static_cast<double>(r1 - r0));
    const QRectF target(left_ + static_cast<double>(c0) * cell_ - hs,
                        top + static_cast<double>(r0) * cell_ - vs, static_cast<double>(c1 - c0) * cell_,
                        static_cast<double>(r1 - r0) * cell_);
    p.drawImage(target, image_, source);
    if (cell_ >= 6) {
      // White gaps between cells, and the frames of first divergences and origins.
      p.setPen(QPen(Qt::white, 1));
      for (auto c = c0; c <= c1; ++c) {
        const double x = left_ + static_cast<double>(c) * cell_ - hs;
        p.drawLine(QPointF(x, target.top()), QPointF(x, target.bottom()));
      }
      for (auto r = r0; r <= r1; ++r) {
        const double y = top + static_cast<double>(r) * cell_ - vs;
        p.drawLine(QPointF(target.left(), y), QPointF(target.right(), y));
      }
      p.setPen(QPen(Qt::black, 2));
      p.setBrush(Qt::NoBrush);
      for (auto r = r0; r < r1; ++r)
        for (auto c = c0; c < c1; ++c)
          if (const auto s = g.at(r, c); s == CellState::FirstDivergence || s == CellState::Origin)
            p.drawRect(cell_rect(r, c).adjusted(1, 1, -1, -1));
    }
  }
  if (selected_) {
    p.setPen(QPen(QColor(30, 100, 230), 3));
    p.setBrush(Qt::NoBrush);
    p.drawRect(cell_rect(selected_->first, selected_->second).adjusted(-1, -1, 1, 1));
  }
  p.restore();

  // Labels, every k-th when one a cell would overlap (level of detail).
  const QFontMetrics fm = fontMetrics();
  const auto every = static_cast<std::size_t>(std::max(1.0, std::ceil((fm.height() + 2) / cell_)));
  p.setPen(Qt::black);
  p.save();
  p.setClipRect(QRect(0, top, left_, vh - top));
  for (auto r = r0 - r0 % every; r < r1; r += every) {
    const bool fits = cell_ >= fm.height();
    const QRect label(2, cell_rect(r, 0).top(), left_ - 8, std::max(static_cast<int>(cell_), fm.height()));
    p.drawText(label, Qt::AlignRight | (fits ? Qt::AlignVCenter : Qt::AlignTop),
               fm.elidedText(shown_text(g.rows[r]), Qt::ElideLeft, label.width()));
  }
  p.restore();
  p.save();
  p.setClipRect(QRect(left_, top - kColumnLabels, vw - left_, kColumnLabels));
  for (auto c = c0 - c0 % every; c < c1; c += every) {
    const QRect cell = cell_rect(0, c);
    p.save();
    p.translate(cell.left() + std::min(static_cast<int>(cell_), fm.height()) / 2 + fm.ascent() / 2, top - 4);
    p.rotate(-60);
    p.drawText(
        0, 0,
        fm.elidedText(shown_text(g.columns[c]), Qt::ElideMiddle, static_cast<int>(kColumnLabels * 1.15)));
    p.restore();
  }
  p.restore();
  // Axis names in the corner, the legend across the top.
  p.drawText(QRect(2, top - fm.height() - 4, left_ - 6, fm.height()), Qt::AlignRight,
             QStringLiteral("%1 \\ %2")
                 .arg(QString::fromStdString(g.row_title), QString::fromStdString(g.column_title)));
  paint_legend(p, QPoint(2, kLegendTop), legend_for(*v_), vw - 8);
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
